"""Every command through the sync client, against a real server, under RESP2 and RESP3."""

from __future__ import annotations

import time

import pytest
import redis

from seckill import (
    UNLIMITED,
    UNLIMITED_STOCK,
    ConfirmOutcome,
    DeductResult,
    Hold,
    ItemInfo,
    OrderState,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestStatus,
    Seckill,
)

FAR_FUTURE_MS = 4102444800000  # 2100-01-01


def test_init_creates_once_and_replaces(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    assert sk.init(key, 5, limit=2) is True
    assert sk.init(key, 7) is False  # left untouched
    assert sk.get(key) == 5
    assert sk.init(key, 7, replace=True) is True
    assert sk.get(key) == 7
    assert sk.info(key).limit == 0


def test_init_options(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    stream_key = f"{key}:orders"
    assert sk.init(key, 10, limit=3, start=1, end=FAR_FUTURE_MS, stream=stream_key, maxlen=100, ex=3600)
    info = sk.info(key)
    assert (info.limit, info.start, info.end, info.stream, info.stream_maxlen) == (3, 1, FAR_FUTURE_MS, stream_key, 100)
    assert 0 < admin.ttl(key) <= 3600
    assert sk.init(key, 10, px=600_000, replace=True)
    assert 0 < admin.pttl(key) <= 600_000
    in_an_hour = int(time.time()) + 3600
    assert sk.init(key, 10, exat=in_an_hour, replace=True)
    assert admin.expiretime(key) == in_an_hour
    assert sk.init(key, 10, pxat=in_an_hour * 1000, replace=True)
    assert admin.pexpiretime(key) == in_an_hour * 1000


def test_unlimited_stock(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    assert sk.init(key, UNLIMITED)
    assert sk.init(f"{key}:2", "unlimited")  # the keyword in any case
    assert sk.get(key) == UNLIMITED_STOCK == 9223372036854775807
    assert sk.deduct(key, "alice", 1000) == DeductResult(Outcome.BOUGHT, UNLIMITED_STOCK)
    assert sk.add(key, 5) == UNLIMITED_STOCK
    info = sk.info(key)
    assert info.unlimited is True and info.stock == UNLIMITED_STOCK and info.sold == 1000


def test_deduct_outcomes(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 5, limit=2)
    bought = sk.deduct(key, "alice", 2, request_id="order-1")
    assert bought == DeductResult(Outcome.BOUGHT, 3) and bought.ok
    # A replay gets the very same reply: nothing tells it apart from the first call.
    assert sk.deduct(key, "alice", 2, request_id="order-1") == bought
    limit = sk.deduct(key, "alice", 1, request_id="order-2")
    assert limit == DeductResult(Outcome.LIMIT_REACHED, None) and not limit.ok
    assert sk.deduct(key, "bob", 2, request_id="order-3").stock == 1
    assert sk.deduct(key, "carol") == DeductResult(Outcome.BOUGHT, 0)  # qty defaults to 1
    assert sk.deduct(key, "dave", 1, request_id="order-5").outcome is Outcome.SOLD_OUT
    assert sk.refund(key, "order-3") == RefundResult(RefundOutcome.REFUNDED, 2)
    assert sk.deduct(key, "bob", 2, request_id="order-3").outcome is Outcome.CANCELLED
    assert sk.deduct(f"{key}:missing", "erin").outcome is Outcome.NO_ITEM

    assert sk.init(f"{key}:later", 100, start=FAR_FUTURE_MS)
    assert sk.deduct(f"{key}:later", "erin", request_id="order-6").outcome is Outcome.NOT_STARTED
    assert sk.window(f"{key}:later", 0, 1) is True
    assert sk.deduct(f"{key}:later", "erin", request_id="order-6").outcome is Outcome.ENDED
    assert sk.window(f"{key}:later", None, None) is True  # None = open side, like 0
    assert sk.deduct(f"{key}:later", "erin", request_id="order-6") == DeductResult(Outcome.BOUGHT, 99)


def test_outcome_codes() -> None:
    codes = {o.name: o.value for o in Outcome}
    assert codes == {
        "BOUGHT": 0,
        "SOLD_OUT": -1,
        "LIMIT_REACHED": -2,
        "NO_ITEM": -3,
        "CANCELLED": -4,
        "NOT_STARTED": -5,
        "ENDED": -6,
    }
    assert {o.name: o.value for o in ConfirmOutcome} == {
        "CONFIRMED": 1,
        "ALREADY_FINAL": 0,
        "CANCELLED": -4,
        "NO_ITEM": -3,
        "REFUNDED": -7,
        "LAPSED": -8,
        "UNKNOWN_REQUEST": -9,
    }
    assert {o.name: o.value for o in RefundOutcome} == {
        "REFUNDED": 1,
        "NOTHING": 0,
        "NO_ITEM": -3,
        "ALREADY_REFUNDED": -7,
        "LAPSED": -8,
        "UNKNOWN_REQUEST": -9,
    }


def test_holds_confirm_release(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10, limit=3)
    assert sk.deduct(key, "frank", 1, request_id="order-7", hold_until=FAR_FUTURE_MS).stock == 9
    assert sk.deduct(key, "grace", 2, request_id="order-8", hold=900).stock == 7
    assert sk.deduct(key, "heidi", 1, request_id="order-9", hold_until=FAR_FUTURE_MS).stock == 6
    listed = sk.holds(key)
    assert listed is not None and len(listed) == 3
    grace = listed[0]  # earliest deadline first
    assert (grace.request_id, grace.user, grace.qty) == ("order-8", "grace", 2)
    assert grace.deadline > int(time.time() * 1000)
    assert listed[1:] == [
        Hold("order-7", "frank", 1, FAR_FUTURE_MS),
        Hold("order-9", "heidi", 1, FAR_FUTURE_MS),
    ]
    assert sk.holds(key, "frank") == [Hold("order-7", "frank", 1, FAR_FUTURE_MS)]
    assert sk.holds(key, "nobody") == []

    assert sk.status(key, "order-7") == OrderState(RequestStatus.HELD, "frank", 1, FAR_FUTURE_MS)
    assert sk.status(key, "unknown") == OrderState(RequestStatus.UNKNOWN, None, 0, 0)
    assert sk.status(f"{key}:missing", "order-7") is None
    assert sk.confirm(key, "order-7") is ConfirmOutcome.CONFIRMED
    assert sk.confirm(key, "order-7") is ConfirmOutcome.ALREADY_FINAL
    assert sk.status(key, "order-7").status is RequestStatus.CONFIRMED
    assert sk.refund(key, "order-8") == RefundResult(RefundOutcome.REFUNDED, 2)
    assert sk.status(key, "order-8").status is RequestStatus.REFUNDED
    assert sk.confirm(key, "order-8") is ConfirmOutcome.REFUNDED
    assert sk.confirm(key, "unknown") is ConfirmOutcome.UNKNOWN_REQUEST
    assert sk.confirm(f"{key}:missing", "order-7") is ConfirmOutcome.NO_ITEM

    assert sk.release(key, "order-9", "unknown") == 1
    assert sk.release(key, "order-9") == 0
    assert sk.holds(key) == []
    assert sk.deduct(key, "heidi", 1, request_id="order-9", hold_until=FAR_FUTURE_MS).outcome is Outcome.CANCELLED
    # A deadline long past lapses at once.
    assert sk.deduct(key, "ivan", 1, request_id="order-10", hold_until=1).ok
    assert sk.confirm(key, "order-10") is ConfirmOutcome.LAPSED
    assert sk.status(key, "order-10") == OrderState(RequestStatus.LAPSED, "ivan", 1, 1)
    info = sk.info(key)
    assert (info.held, info.holds, info.expired, info.refunded) == (0, 0, 2, 2)


def test_refund_add_get_bought(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    missing = f"{key}:missing"
    sk.init(key, 3)
    sk.deduct(key, "alice", 2, request_id="o1")
    assert sk.bought(key, "alice") == 2
    assert sk.bought(key, "nobody") == 0
    assert sk.refund(key, "o1") == RefundResult(RefundOutcome.REFUNDED, 2)
    assert sk.refund(key, "o1") == RefundResult(RefundOutcome.ALREADY_REFUNDED, None)
    assert sk.refund(key, "never") == RefundResult(RefundOutcome.UNKNOWN_REQUEST)
    assert sk.bought(key, "alice") == 0
    assert sk.add(key, 4) == 7
    assert sk.get(key) == 7
    assert sk.refund(missing, "o1") == RefundResult(RefundOutcome.NO_ITEM)
    for value in (sk.get(missing), sk.bought(missing, "a"), sk.add(missing, 1)):
        assert value is None
    assert sk.release(missing, "o1") is None
    assert sk.window(missing, 0, 0) is None
    assert sk.stream(missing) is None
    assert sk.holds(missing) is None
    assert sk.info(missing) is None


def test_confirm_and_refund_tell_refunded_lapsed_and_unknown_apart(
    r: redis.Redis, admin: redis.Redis, key: str
) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    sk.deduct(key, "ann", 2, request_id="refunded", hold=600)
    sk.deduct(key, "bob", 1, request_id="lapsed", hold=600)
    sk.deduct(key, "cy", 3, request_id="bought")
    assert sk.refund(key, "refunded") == RefundResult(RefundOutcome.REFUNDED, 2)
    assert sk.release(key, "lapsed") == 1  # the hold lapses now, as at its deadline

    assert sk.confirm(key, "refunded") is ConfirmOutcome.REFUNDED
    assert sk.confirm(key, "lapsed") is ConfirmOutcome.LAPSED
    assert sk.confirm(key, "never") is ConfirmOutcome.UNKNOWN_REQUEST
    assert sk.confirm(key, "bought") is ConfirmOutcome.ALREADY_FINAL  # bought without a hold
    assert sk.refund(key, "refunded") == RefundResult(RefundOutcome.ALREADY_REFUNDED)
    assert sk.refund(key, "lapsed") == RefundResult(RefundOutcome.LAPSED)
    assert sk.refund(key, "never") == RefundResult(RefundOutcome.UNKNOWN_REQUEST)
    assert sk.refund(key, "bought") == RefundResult(RefundOutcome.REFUNDED, 3)
    assert sk.confirm(key, "bought") is ConfirmOutcome.REFUNDED
    # Nothing was given back twice: the item has all 10 units again.
    assert sk.get(key) == 10

    # Sent without DETAIL (a raw call on the wrapped client), the three share the old replies,
    # typed as CANCELLED and NOTHING; the server tells them apart only when asked.
    for request_id in ("refunded", "lapsed", "never"):
        assert r.execute_command("SECKILL.CONFIRM", key, request_id) is ConfirmOutcome.CANCELLED
        assert r.execute_command("SECKILL.REFUND", key, request_id) == RefundResult(RefundOutcome.NOTHING)
    assert admin.execute_command("SECKILL.CONFIRM", key, "never") == -4
    assert admin.execute_command("SECKILL.CONFIRM", key, "never", "DETAIL") == -9


def test_deduct_with_a_hold_returns_its_deadline(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 3, limit=2)
    before_ms = int(time.time() * 1000)
    held = sk.deduct(key, "ann", 1, request_id="h1", hold=900)
    assert held.outcome is Outcome.BOUGHT and held.stock == 2
    assert held.deadline is not None and before_ms + 900_000 <= held.deadline <= int(time.time() * 1000) + 900_000
    assert held.deadline == sk.status(key, "h1").deadline
    assert sk.deduct(key, "bob", 1, request_id="h2", hold_until=FAR_FUTURE_MS) == DeductResult(
        Outcome.BOUGHT, 1, FAR_FUTURE_MS
    )
    assert sk.status(key, "h2").deadline == FAR_FUTURE_MS
    # A replay of a pending hold gets the same deadline; once the hold is confirmed, none.
    assert sk.deduct(key, "ann", 1, request_id="h1", hold=900) == held
    assert sk.confirm(key, "h1") is ConfirmOutcome.CONFIRMED
    assert sk.deduct(key, "ann", 1, request_id="h1", hold=900) == DeductResult(Outcome.BOUGHT, 2, None)

    # Without a hold nothing new is sent, and there is no deadline.
    assert sk.deduct(key, "cy", 1, request_id="p1") == DeductResult(Outcome.BOUGHT, 0, None)
    assert sk.deduct(key, "dee") == DeductResult(Outcome.SOLD_OUT, None, None)
    # A refused hold has none either.
    assert sk.deduct(key, "dee", 1, request_id="h3", hold=900) == DeductResult(Outcome.SOLD_OUT, None, None)
    assert sk.deduct(f"{key}:missing", "dee", 1, request_id="h3", hold=900) == DeductResult(Outcome.NO_ITEM)

    # The integer reply (no WITHDEADLINE) and the [code, deadline] one decode alike on the client.
    assert r.execute_command("SECKILL.DEDUCT", key, "eve", 1) == DeductResult(Outcome.SOLD_OUT)
    sk.add(key, 1)
    hold = ("ID", "h4", "HOLDUNTIL", FAR_FUTURE_MS)
    assert admin.execute_command("SECKILL.DEDUCT", key, "eve", 1, *hold, "WITHDEADLINE") == [0, FAR_FUTURE_MS]
    # WITHDEADLINE may come anywhere among the options; a replay decodes the same.
    replayed = r.execute_command("SECKILL.DEDUCT", key, "eve", 1, "WITHDEADLINE", *hold)
    assert replayed == DeductResult(Outcome.BOUGHT, 0, FAR_FUTURE_MS)


def test_stream(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    orders = f"{key}:orders"
    sk.init(key, 10, limit=1)
    assert sk.stream(key, orders, maxlen=2) is True
    info = sk.info(key)
    assert (info.stream, info.stream_maxlen) == (orders, 2)
    for user in ("a", "b", "c"):
        assert sk.deduct(key, user, request_id=f"o-{user}").ok
    assert admin.xlen(orders) == 2  # trimmed to MAXLEN exactly
    event = admin.xrange(orders)[-1][1]
    assert (event["event"], event["user"], event["request"], event["stock"]) == ("purchase", "c", "o-c", "7")
    assert sk.stream(key) is True  # cleared
    assert sk.info(key).stream is None
    sk.deduct(key, "d")
    assert admin.xlen(orders) == 2
    with pytest.raises(ValueError):
        sk.stream(key, maxlen=5)


def test_info_fields(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 5, limit=2)
    sk.deduct(key, "alice", 2, request_id="order-1")
    sk.deduct(key, "bob", 2, request_id="order-3")
    sk.deduct(key, "carol", 1, request_id="order-4", hold=900)
    sk.refund(key, "order-3")
    sk.add(key, 3)
    assert sk.info(key) == ItemInfo(
        stock=5,
        unlimited=False,
        limit=2,
        initial=5,
        added=3,
        sold=5,
        refunded=2,
        held=1,
        holds=1,
        expired=0,
        buyers=2,
        requests=3,
        start=0,
        end=0,
        stream=None,
        stream_maxlen=0,
        stream_confirmed=False,
    )


def test_same_typed_values_under_resp2_and_resp3(server, key: str) -> None:  # type: ignore[no-untyped-def]
    seen = []
    for protocol in (2, 3):
        with redis.Redis(port=server.port, protocol=protocol) as client:
            sk = Seckill(client)
            item = f"{key}:{protocol}"
            sk.init(item, 4, limit=2, stream=f"{key}:orders")
            seen.append(
                (
                    sk.deduct(item, "u", 1, request_id="r", hold_until=FAR_FUTURE_MS),
                    sk.holds(item),
                    sk.info(item),
                    sk.status(item, "r"),
                    sk.confirm(item, "r"),
                    sk.get(item),
                )
            )
    assert seen[0] == seen[1]
    assert isinstance(seen[0][2], ItemInfo) and seen[0][2].stream == f"{key}:orders"


def test_binary_ids_and_decode_responses(server, key: str) -> None:  # type: ignore[no-untyped-def]
    with redis.Redis(port=server.port) as client:
        sk = Seckill(client)
        sk.init(key, 10)
        sk.deduct(key, b"\xff\xfeuser", 1, request_id=b"\x00id\xff", hold_until=FAR_FUTURE_MS)
        sk.deduct(key, "zoë", 1, request_id="ünïcode", hold_until=FAR_FUTURE_MS)
        assert sk.holds(key) == [
            Hold(b"\x00id\xff", b"\xff\xfeuser", 1, FAR_FUTURE_MS),  # not UTF-8: kept as bytes
            Hold("ünïcode", "zoë", 1, FAR_FUTURE_MS),
        ]
    with redis.Redis(port=server.port, decode_responses=True, protocol=3) as client:
        sk = Seckill(client)
        assert sk.holds(key, "zoë") == [Hold("ünïcode", "zoë", 1, FAR_FUTURE_MS)]
        assert sk.info(key).held == 2


def test_raw_execute_command_is_typed_after_wrapping(r: redis.Redis, key: str) -> None:
    Seckill(r)
    assert r.execute_command("SECKILL.INIT", key, 2) is True
    assert r.execute_command("SECKILL.DEDUCT", key, "u", 1) == DeductResult(Outcome.BOUGHT, 1)
    assert r.execute_command("SECKILL.DEDUCT", key, "u", 1, "ID", "r", "HOLDUNTIL", FAR_FUTURE_MS, "WITHDEADLINE") == (
        DeductResult(Outcome.BOUGHT, 0, FAR_FUTURE_MS)
    )
    assert r.execute_command("SECKILL.REFUND", key, "r", "DETAIL") == RefundResult(RefundOutcome.REFUNDED, 1)
    assert isinstance(r.execute_command("SECKILL.INFO", key), ItemInfo)


def test_arguments_are_type_checked(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    for call in (
        lambda: sk.init(key, "5"),
        lambda: sk.init(key, 5.0),  # type: ignore[arg-type]
        lambda: sk.deduct(key, "u", True),
        lambda: sk.deduct(key, 42, 1),  # type: ignore[arg-type]
        lambda: sk.add(key, "1"),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(TypeError, match="seckill.asyncio"):
        Seckill(redis.asyncio.Redis())
