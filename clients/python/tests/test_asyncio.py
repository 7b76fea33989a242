"""Every command through the asyncio client, against a real server, under RESP2 and RESP3."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio

from seckill import (
    UNLIMITED,
    UNLIMITED_STOCK,
    ConfirmOutcome,
    DeductResult,
    Hold,
    ItemInfo,
    Outcome,
    RefundOutcome,
    RefundResult,
)
from seckill.asyncio import Seckill

FAR_FUTURE_MS = 4102444800000


def run_with_client(server, protocol: int, test) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            await test(client)
        finally:
            await client.aclose()

    asyncio.run(main())


def test_flash_sale(server, protocol: int, key: str, admin: redis.Redis) -> None:  # type: ignore[no-untyped-def]
    async def test(client: redis.asyncio.Redis) -> None:
        sk = Seckill(client)
        missing = f"{key}:missing"
        assert await sk.init(key, 5, limit=2, ex=3600) is True
        assert await sk.init(key, 5, limit=2) is False
        assert 0 < admin.ttl(key) <= 3600
        assert await sk.deduct(key, "alice", 2, request_id="order-1") == DeductResult(Outcome.BOUGHT, 3)
        assert await sk.deduct(key, "alice", 2, request_id="order-1") == DeductResult(Outcome.BOUGHT, 3)
        assert (await sk.deduct(key, "alice", 1, request_id="order-2")).outcome is Outcome.LIMIT_REACHED
        assert (await sk.deduct(key, "bob", 2, request_id="order-3")).stock == 1
        assert await sk.deduct(key, "carol") == DeductResult(Outcome.BOUGHT, 0)
        assert (await sk.deduct(key, "dave", 1, request_id="order-5")).outcome is Outcome.SOLD_OUT
        assert await sk.refund(key, "order-3") == RefundResult(RefundOutcome.REFUNDED, 2)
        assert await sk.refund(key, "order-3") == RefundResult(RefundOutcome.ALREADY_REFUNDED)
        assert await sk.refund(key, "never") == RefundResult(RefundOutcome.UNKNOWN_REQUEST)
        assert await sk.get(key) == 2
        assert await sk.bought(key, "bob") == 0
        assert (await sk.deduct(key, "bob", 2, request_id="order-3")).outcome is Outcome.CANCELLED
        assert await sk.add(key, 3) == 5
        assert (await sk.deduct(missing, "erin")).outcome is Outcome.NO_ITEM

        assert await sk.window(key, FAR_FUTURE_MS, 0) is True
        assert (await sk.deduct(key, "erin", request_id="order-6")).outcome is Outcome.NOT_STARTED
        assert await sk.window(key, 0, 1) is True
        assert (await sk.deduct(key, "erin", request_id="order-6")).outcome is Outcome.ENDED
        assert await sk.window(key, 0, 0) is True

        frank_held = await sk.deduct(key, "frank", 1, request_id="order-7", hold_until=FAR_FUTURE_MS)
        assert frank_held.ok and frank_held.deadline == FAR_FUTURE_MS
        grace_held = await sk.deduct(key, "grace", 1, request_id="order-8", hold=900)
        assert grace_held.ok
        grace, frank = await sk.holds(key)
        assert frank == Hold("order-7", "frank", 1, FAR_FUTURE_MS)
        assert (grace.request_id, grace.user, grace.qty) == ("order-8", "grace", 1)
        assert grace.deadline > time.time() * 1000
        assert grace_held.deadline == grace.deadline
        assert await sk.holds(key, "frank") == [frank]
        assert (await sk.status(key, "order-8")).deadline == grace.deadline
        assert await sk.status(missing, "order-8") is None
        assert await sk.confirm(key, "order-7") is ConfirmOutcome.CONFIRMED
        assert await sk.confirm(key, "order-7") is ConfirmOutcome.ALREADY_FINAL
        assert await sk.release(key, "order-8") == 1
        assert await sk.confirm(key, "order-8") is ConfirmOutcome.LAPSED
        assert await sk.refund(key, "order-8") == RefundResult(RefundOutcome.LAPSED)
        assert await sk.confirm(key, "order-3") is ConfirmOutcome.REFUNDED
        assert await sk.confirm(key, "never") is ConfirmOutcome.UNKNOWN_REQUEST
        assert await sk.confirm(missing, "order-8") is ConfirmOutcome.NO_ITEM
        assert await sk.refund(missing, "order-8") == RefundResult(RefundOutcome.NO_ITEM)

        orders = f"{key}:orders"
        assert await sk.stream(key, orders, maxlen=10) is True
        assert (await sk.deduct(key, "heidi", 1, request_id="order-9")).deadline is None
        assert admin.xlen(orders) == 1
        assert await sk.info(key) == ItemInfo(
            stock=3,
            unlimited=False,
            limit=2,
            initial=5,
            added=3,
            sold=8,
            refunded=2,
            held=0,
            holds=0,
            expired=1,
            buyers=4,
            requests=5,
            start=0,
            end=0,
            stream=orders,
            stream_maxlen=10,
            stream_confirmed=True,
        )
        assert await sk.stream(key) is True
        assert (await sk.info(key)).stream is None

        for value in await asyncio.gather(
            sk.get(missing),
            sk.bought(missing, "u"),
            sk.add(missing, 1),
            sk.release(missing, "r"),
            sk.window(missing, 0, 0),
            sk.stream(missing),
            sk.holds(missing),
            sk.info(missing),
        ):
            assert value is None

    run_with_client(server, protocol, test)


def test_unlimited(server, protocol: int, key: str) -> None:  # type: ignore[no-untyped-def]
    async def test(client: redis.asyncio.Redis) -> None:
        sk = Seckill(client)
        assert await sk.init(key, UNLIMITED) is True
        assert await sk.deduct(key, "u", 7) == DeductResult(Outcome.BOUGHT, UNLIMITED_STOCK)
        info = await sk.info(key)
        assert info is not None and info.unlimited and info.stock == UNLIMITED_STOCK

    run_with_client(server, protocol, test)


def test_rejects_sync_clients(server) -> None:  # type: ignore[no-untyped-def]
    with redis.Redis(port=server.port) as client, pytest.raises(TypeError, match="seckill.Seckill"):
        Seckill(client)
