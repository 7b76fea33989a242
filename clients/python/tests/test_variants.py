"""Items with variants (a drop of sizes under one limit) through the sync and asyncio clients,
against a real server, under RESP2 and RESP3."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio

from seckill import (
    UNLIMITED_STOCK,
    BuyerRecord,
    DeductResult,
    Hold,
    InvalidArgumentError,
    Outcome,
    RequestStatus,
    Seckill,
)
from seckill import asyncio as seckill_asyncio

FAR_FUTURE_MS = 4102444800000  # 2100-01-01


def test_a_drop_of_sizes_under_one_limit(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    assert sk.init(key, {"42": 1, "43": 2, "44": "unlimited"}, limit=1, variant_limits={"43": 1}) is True
    assert sk.info(key, variant="44").unlimited
    assert sk.deduct(key, "ann", request_id="a1", variant="42") == DeductResult(Outcome.BOUGHT, 0)
    # One pair across sizes: ann's second size is over the limit; 42 is sold out for bob.
    assert sk.deduct(key, "ann", request_id="a2", variant="43").outcome is Outcome.LIMIT_REACHED
    assert sk.deduct(key, "bob", request_id="b1", variant="42").outcome is Outcome.SOLD_OUT
    held = sk.deduct(key, "bob", request_id="b2", variant="43", hold_until=FAR_FUTURE_MS)
    assert (held.outcome, held.stock, held.deadline) == (Outcome.BOUGHT, 1, FAR_FUTURE_MS)
    # A retry is the same purchase, in its variant.
    assert sk.deduct(key, "ann", request_id="a1", variant="42") == DeductResult(Outcome.BOUGHT, 0)
    assert sk.get(key, variant="42") == 0
    assert sk.get(key, variant="43") == 1
    assert sk.bought(key, "ann") == 1
    assert sk.bought(key, "ann", variant="43") == 0
    whole = sk.info(key)
    assert (whole.variants, whole.limit, whole.sold, whole.held) == (3, 1, 2, 1)
    one = sk.info(key, variant="43")
    assert (one.variants, one.limit, one.sold, one.stock) == (0, 1, 1, 1)
    state = sk.status(key, "b2")
    assert (state.status, state.user, state.variant) == (RequestStatus.HELD, "bob", "43")
    assert sk.status(key, "nope").variant is None
    assert sk.holds(key) == [Hold("b2", "bob", 1, FAR_FUTURE_MS, "43")]
    assert sk.add(key, 3, variant="42") == 3
    assert list(sk.scan_iter(key, variant="42")) == [BuyerRecord("ann", 1), *sk.scan(key, variant="42")[1][1:]]
    # Confirmed and refunded by request id alone.
    assert sk.refund(key, "a1").units == 1
    assert sk.deduct(key, "ann", request_id="a3", variant="42").outcome is Outcome.BOUGHT
    # Without a variant, or naming one the item does not have: the module's error, typed.
    with pytest.raises(InvalidArgumentError, match="name one with VARIANT"):
        sk.deduct(key, "cy")
    with pytest.raises(InvalidArgumentError, match="no such variant"):
        sk.get(key, variant="45")
    with pytest.raises(InvalidArgumentError, match="has no variants"):
        sk.init(f"{key}:plain", 5)
        sk.deduct(f"{key}:plain", "cy", variant="42")
    with pytest.raises(TypeError):
        sk.take(key, 1, "transfer-1", variant=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sk.settle(key, "transfer-1", variant=42)  # type: ignore[arg-type]


def test_variants_through_a_pipeline_and_asyncio(server, protocol: int, key: str) -> None:  # type: ignore[no-untyped-def]
    with redis.Redis(port=server.port, protocol=protocol) as client:
        with client.pipeline() as pipe:
            sk = Seckill(pipe)
            sk.init(key, {"s": 2, "m": 2}, limit=2)
            sk.deduct(key, "ann", 2, request_id="p1", variant="s")
            sk.deduct(key, "ann", 1, request_id="p2", variant="m")
            sk.get(key)
            sk.info(key, variant="m")
            sk.variants(key)
            created, bought, refused, total, medium, sizes = sk.execute()
    # In INIT's order, as a dict under RESP2 (a flat array) and RESP3 (a map) alike.
    assert list(sizes.items()) == [("s", 0), ("m", 2)]
    assert (created, bought.outcome, refused.outcome, total) == (True, Outcome.BOUGHT, Outcome.LIMIT_REACHED, 2)
    assert (medium.stock, medium.variants) == (2, 0)

    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            sk = seckill_asyncio.Seckill(client)
            result = await sk.deduct(key, "bo", request_id="q1", variant="m", hold=600)
            assert result.outcome is Outcome.BOUGHT and result.deadline is not None
            assert (await sk.status(key, "q1")).variant == "m"
            assert [hold.variant for hold in await sk.holds(key, "bo")] == ["m"]
            assert await sk.get(key, variant="m") == 1
            assert await sk.bought(key, "bo") == 1
            assert (await sk.info(key)).variants == 2
            records = [record async for record in sk.scan_iter(key, variant="m")]
            assert BuyerRecord("bo", 1) in records
            assert await sk.add(key, 1, variant="m") == 2
            assert await sk.variants(key) == {"s": 0, "m": 2}
        finally:
            await client.aclose()

    asyncio.run(main())


def test_an_order_and_a_cart_buy_a_size(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    drop, laces = f"{key}:drop", f"{key}:laces"
    assert sk.init(drop, {"42": 1, "43": 1}, limit=1)
    assert sk.init(laces, 10)
    placed = sk.order([(drop, 1, "43"), (laces, 2)], "ann", "o1", hold_until=FAR_FUTURE_MS)
    assert placed.taken and placed.deadline == FAR_FUTURE_MS
    assert [line.stock for line in placed.lines] == [0, 8]
    # A second pair, in the other size, is over ann's limit across sizes: nothing is taken.
    refused = sk.order([(drop, 1, "42"), (laces, 1, None)], "ann", "o2")
    assert not refused.taken and refused.refused == {0: Outcome.LIMIT_REACHED}
    assert sk.get(laces) == 8
    assert sk.confirm_order([drop, laces], "o1").confirmed
    assert sk.status(drop, "o1").variant == "43"
    with pytest.raises(InvalidArgumentError, match="name one with VARIANT"):
        sk.order([(drop, 1), (laces, 1)], "bob", "o3")
    with pytest.raises(TypeError):
        sk.order([(drop, 1, "42", "extra")], "bob", "o3")


def test_a_cart_holds_a_size(r: redis.Redis, key: str) -> None:
    from seckill import Cart

    sk = Seckill(r)
    drop, laces = f"{key}:drop", f"{key}:laces"
    assert sk.init(drop, {"42": 1, "43": 1}, limit=1)
    assert sk.init(laces, 10)
    cart = Cart(r)
    placed = cart.place("cart-1", "eve", [(drop, 1, "42"), (laces, 2, None)], 600)
    assert placed.placed
    assert sk.status(drop, "cart-1").variant == "42"
    other = cart.place("cart-2", "eve", [(drop, 1, "43")], 600)
    assert (other.placed, other.refusal) == (False, Outcome.LIMIT_REACHED)
    assert cart.confirm("cart-1", [drop, laces]).paid


def test_variants_names_each_size_with_its_stock(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    assert sk.variants(key) is None
    sk.init(key, {"9": 3, "10": 2, "8": "UNLIMITED"}, limit=5)
    sk.deduct(key, "ann", 1, variant="10")
    assert list(sk.variants(key).items()) == [("9", 3), ("10", 1), ("8", UNLIMITED_STOCK)]
    sk.init(f"{key}:plain", 4)
    assert sk.variants(f"{key}:plain") == {}
