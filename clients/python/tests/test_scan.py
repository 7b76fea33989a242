"""SECKILL.SCAN through the sync and asyncio clients, against a real server, under RESP2 and RESP3:
one page at a time and the iterator that follows the cursor to its end."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from seckill import BuyerRecord, InvalidArgumentError, RequestRecord, RequestStatus, ScanRecord, Seckill

FAR_FUTURE_MS = 4102444800000  # 2100-01-01


def every_status(sk: Seckill, key: str) -> list[ScanRecord]:
    """An item with a request id of every status and a buyer without one; the records SCAN gives."""
    past = int(time.time() * 1000) - 60_000
    assert sk.init(key, 100)
    assert sk.deduct(key, "ann", 1, request_id="r-purchased").ok
    assert sk.deduct(key, "bob", 2, request_id="r-held", hold_until=FAR_FUTURE_MS).ok
    assert sk.deduct(key, "cy", 1, request_id="r-confirmed", hold_until=FAR_FUTURE_MS).ok
    assert sk.confirm(key, "r-confirmed").name == "CONFIRMED"
    assert sk.deduct(key, "dee", 3, request_id="r-refunded").ok
    assert sk.refund(key, "r-refunded").units == 3
    assert sk.deduct(key, "eve", 1, request_id="r-lapsed", hold_until=past).ok
    assert sk.deduct(key, "fay", 2).ok  # no id: a buyer record only
    return [
        BuyerRecord("ann", 1),
        RequestRecord("r-purchased", "ann", 1, RequestStatus.PURCHASED, 0),
        BuyerRecord("bob", 2),
        RequestRecord("r-held", "bob", 2, RequestStatus.HELD, FAR_FUTURE_MS),
        BuyerRecord("cy", 1),
        RequestRecord("r-confirmed", "cy", 1, RequestStatus.CONFIRMED, FAR_FUTURE_MS),
        BuyerRecord("dee", 0),
        RequestRecord("r-refunded", "dee", 3, RequestStatus.REFUNDED, 0),
        BuyerRecord("eve", 0),
        RequestRecord("r-lapsed", "eve", 1, RequestStatus.LAPSED, past),
        BuyerRecord("fay", 2),
    ]


def test_scan_iter_returns_every_record_once_with_its_fields(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    expected = every_status(sk, key)
    assert list(sk.scan_iter(key)) == expected
    assert list(sk.scan_iter(key, count=1)) == expected
    assert list(sk.scan_iter(key, count=10_000)) == expected


def test_scan_pages_follow_the_cursor(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    expected = every_status(sk, key)
    cursor, page = sk.scan(key, 0, count=4)
    assert cursor != 0 and page == expected[:4]
    seen = list(page)
    while cursor != 0:
        cursor, page = sk.scan(key, cursor, count=4)
        assert len(page) <= 4
        seen += page
    assert seen == expected
    # The default page is 10 records.
    cursor, page = sk.scan(key)
    assert cursor != 0 and page == expected[:10]


def test_scan_iter_sees_every_earlier_record_while_purchases_happen(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 1_000_000)
    pipe = admin.pipeline(transaction=False)
    for n in range(2500):
        pipe.execute_command("SECKILL.DEDUCT", key, f"user-{n}", 1, "ID", f"order-{n}")
    pipe.execute()
    earlier = {("buyer", f"user-{n}") for n in range(2500)} | {("request", f"order-{n}") for n in range(2500)}

    seen: list[tuple[str, str | bytes]] = []
    later = 0
    for record in sk.scan_iter(key, count=100):
        if isinstance(record, BuyerRecord):
            seen.append(("buyer", record.user))
        else:
            if record.request_id.startswith("order-"):
                assert (record.user, record.qty, record.status) == (f"user-{record.request_id[6:]}", 1, RequestStatus.PURCHASED)
            seen.append(("request", record.request_id))
        if len(seen) % 100 == 0:  # a page went by: buy between pages, old buyers and new ones
            admin.execute_command("SECKILL.DEDUCT", key, f"user-{later % 2500}", 1)
            admin.execute_command("SECKILL.DEDUCT", key, f"late-{later}", 1, "ID", f"late-order-{later}")
            later += 1
    assert later > 40
    assert len(seen) == len(set(seen)), "a record came twice"
    assert earlier <= set(seen)


def test_a_missing_item_scans_as_nothing(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    assert sk.scan(key, 0) == (0, [])
    assert list(sk.scan_iter(key)) == []


def test_a_bad_cursor_is_an_invalid_argument(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    sk.deduct(key, "ann", 1)
    with pytest.raises(InvalidArgumentError, match="invalid cursor") as raised:
        sk.scan(key, 12345)
    assert (raised.value.code, raised.value.message) == ("ERR", "invalid cursor")
    with pytest.raises(TypeError):
        sk.scan(key, "0")  # type: ignore[arg-type]


def test_scan_in_a_pipeline_and_scan_iter_refused_there(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    expected = every_status(sk, key)
    with r.pipeline(transaction=False) as pipe:
        queued = Seckill(pipe)
        queued.scan(key, 0, count=100)
        queued.scan(f"{key}:missing", 0)
        assert queued.execute() == [(0, expected), (0, [])]
        with pytest.raises(TypeError, match="scan_iter needs a client"):
            next(queued.scan_iter(key))


def test_asyncio_scan(server, protocol: int, key: str, admin: redis.Redis) -> None:  # type: ignore[no-untyped-def]
    expected = every_status(Seckill(admin), key)

    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            assert [record async for record in sk.scan_iter(key, count=3)] == expected
            cursor, page = await sk.scan(key, 0, count=5)
            assert cursor != 0 and page == expected[:5]
            assert await sk.scan(f"{key}:missing", 0) == (0, [])
            assert [record async for record in sk.scan_iter(f"{key}:missing")] == []
            with pytest.raises(InvalidArgumentError, match="invalid cursor"):
                await sk.scan(key, 12345)

            # Purchases between pages: every earlier record comes once.
            big = f"{key}:big"
            await sk.init(big, 1_000_000)
            async with client.pipeline(transaction=False) as pipe:
                for n in range(2000):
                    pipe.execute_command("SECKILL.DEDUCT", big, f"user-{n}", 1, "ID", f"order-{n}")
                await pipe.execute()
            seen = []
            async for record in sk.scan_iter(big, count=250):
                seen.append(record.request_id if isinstance(record, RequestRecord) else ("buyer", record.user))
                if len(seen) % 250 == 0:
                    await sk.deduct(big, f"late-{len(seen)}", 1, request_id=f"late-order-{len(seen)}")
            assert len(seen) == len(set(seen))
            assert {f"order-{n}" for n in range(2000)} | {("buyer", f"user-{n}") for n in range(2000)} <= set(seen)
        finally:
            await client.aclose()

    asyncio.run(main())
