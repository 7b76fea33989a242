"""Stock transfers between parts (TAKE, ADD ... ID, SETTLE, TRANSFERS) on a real standalone server,
sync and asyncio, RESP2 and RESP3."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from seckill import (
    UNLIMITED,
    ErrorKind,
    InvalidArgumentError,
    ItemFullError,
    ItemInfo,
    RequestIdConflictError,
    Seckill,
    SettleOutcome,
    Transfer,
)
from seckill.replies import item_info

CONFLICT = "transfer id was already used for another quantity or the other direction"


def balanced(info: ItemInfo) -> bool:
    """The INFO invariant of a limited item."""
    return (
        info.stock + info.sold - info.refunded - info.expired + info.moved_out - info.moved_in
        == info.initial + info.added
    )


def test_settle_outcome_codes() -> None:
    assert {o.name: o.value for o in SettleOutcome} == {
        "SETTLED": 1,
        "ALREADY_SETTLED": 0,
        "UNKNOWN": -4,
        "NO_ITEM": -3,
    }


def test_full_move(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    source, destination, missing = f"{key}:part:0", f"{key}:part:1", f"{key}:missing"
    assert sk.init(source, 10) is True
    assert sk.init(destination, 0) is True

    assert sk.take(source, 4, "move-1", to=destination) == 4
    assert sk.take(source, 4, "move-1", to=destination) == 4  # a replay takes nothing more
    assert sk.get(source) == 6
    assert sk.transfers(source) == [Transfer("move-1", 4, destination)]
    assert sk.transfers(destination) == []

    assert sk.add(destination, 4, "move-1") == 4
    assert sk.add(destination, 4, transfer_id="move-1") == 4  # a replay adds nothing
    assert sk.get(destination) == 4

    assert sk.settle(source, "move-1") is SettleOutcome.SETTLED
    assert sk.settle(source, "move-1") is SettleOutcome.ALREADY_SETTLED
    assert sk.transfers(source) == []
    assert sk.settle(source, "unknown") is SettleOutcome.UNKNOWN
    assert sk.settle(destination, "move-1") is SettleOutcome.UNKNOWN  # received here, not given out
    assert sk.take(source, 4, "move-1", to=destination) == 4  # still a replay after settling
    assert sk.get(source) == 6

    assert sk.take(missing, 1, "move-2") is None
    assert sk.add(missing, 1, "move-2") is None
    assert sk.settle(missing, "move-1") is SettleOutcome.NO_ITEM
    assert sk.transfers(missing) is None

    out, into = sk.info(source), sk.info(destination)
    assert (out.stock, out.initial, out.moved_out, out.moved_in) == (6, 10, 4, 0)
    assert (into.stock, into.initial, into.added, into.moved_out, into.moved_in) == (4, 0, 0, 0, 4)
    assert balanced(out) and balanced(into)


def test_take_edges(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 5)
    assert sk.take(key, 100, "all") == 5  # up to the stock in hand
    assert sk.take(key, 100, "all", to="elsewhere") == 5  # the destination is not compared on a replay
    assert sk.take(key, 3, "nothing-left") == 0
    assert sk.transfers(key) == [Transfer("all", 5, None)]  # no TO: no destination
    assert sk.settle(key, "nothing-left") is SettleOutcome.UNKNOWN  # it took nothing: nothing recorded
    # A replay must repeat the quantity asked for, not the count taken.
    with pytest.raises(RequestIdConflictError) as raised:
        sk.take(key, 5, "all")
    assert (raised.value.kind, raised.value.code, raised.value.message) == (
        ErrorKind.REQUEST_ID_CONFLICT,
        "ERR",
        CONFLICT,
    )
    # The other direction: an id given out by TAKE cannot be received by ADD ... ID, nor the reverse.
    with pytest.raises(RequestIdConflictError):
        sk.add(key, 100, "all")
    assert sk.add(key, 2, "in-1") == 2
    with pytest.raises(RequestIdConflictError):
        sk.take(key, 2, "in-1")
    with pytest.raises(RequestIdConflictError):
        sk.add(key, 3, "in-1")

    binary = b"\xff\x00move"
    assert sk.take(key, 1, binary, to=b"\xfepart") == 1
    assert sk.transfers(key) == [Transfer("all", 5, None), Transfer(binary, 1, b"\xfepart")]
    info = sk.info(key)
    assert (info.stock, info.moved_out, info.moved_in) == (1, 6, 2) and balanced(info)
    # The parts of a drop with sizes move stock size by size.
    drop, other = key + ":drop", key + ":drop2"
    for part in (drop, other):
        r.execute_command("SECKILL.INIT", part, "VARIANTS", "2", "42", "5", "43", "5")
    assert sk.take(drop, 2, "d1", to=other, variant="43") == 2
    assert sk.transfers(drop) == [Transfer("d1", 2, other, "43")]
    with pytest.raises(RequestIdConflictError):
        sk.take(drop, 1, "d1", variant="42")  # one transfer id, one transfer of one variant
    assert sk.add(other, 2, "d1", variant="43") == 7
    assert sk.settle(drop, "d1", variant="43") is SettleOutcome.SETTLED
    assert (sk.get(drop, variant="43"), sk.get(other, variant="43")) == (3, 7)


def test_transfer_errors(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 5)
    sk.init(f"{key}:unlimited", UNLIMITED)
    for call, message in (
        (lambda: sk.take(key, 0, "t"), "value is out of range, must be positive"),
        (lambda: sk.take(key, 1, ""), "transfer id must be 1 to 128 bytes"),
        (lambda: sk.settle(key, "x" * 129), "transfer id must be 1 to 128 bytes"),
        (lambda: sk.take(key, 1, "t", to=""), "destination must be 1 to 255 bytes"),
        (lambda: sk.take(f"{key}:unlimited", 1, "t"), "an unlimited item moves no units"),
        (lambda: sk.add(f"{key}:unlimited", 1, "t"), "an unlimited item moves no units"),
    ):
        with pytest.raises(InvalidArgumentError) as raised:
            call()
        assert (raised.value.kind, raised.value.code, raised.value.message) == (
            ErrorKind.INVALID_ARGUMENT,
            "ERR",
            message,
        )
    with pytest.raises(TypeError):
        sk.take(key, "1", "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sk.add(key, 1, 7)  # type: ignore[arg-type]
    assert sk.get(key) == 5


def test_transfers_full(server, key: str) -> None:  # type: ignore[no-untyped-def]
    """An item records 10,000 transfer ids at most; a TAKE that finds no stock records nothing."""
    with redis.Redis(port=server.port) as client:
        sk = Seckill(client)
        sk.init(key, 0)
        assert sk.take(key, 1, "empty") == 0  # nothing recorded: uses up no transfer
        pipe = client.pipeline(transaction=False)
        for i in range(10_000):
            pipe.execute_command("SECKILL.ADD", key, 1, "ID", f"t{i}")
        assert pipe.execute()[-1] == 10_000
        for call in (lambda: sk.take(key, 1, "one-more"), lambda: sk.add(key, 1, "one-more")):
            with pytest.raises(ItemFullError) as raised:
                call()
            assert (raised.value.kind, raised.value.code, raised.value.message) == (
                ErrorKind.ITEM_FULL,
                "ERR",
                "sale item is full: it cannot record more transfers (10000 at most)",
            )
        assert sk.add(key, 1, "t5") == 6  # replays still answer
        assert sk.add(key, 1) == 10_001  # and plain ADD still works


def test_info_moved_fields_under_resp2_and_resp3(server, key: str) -> None:  # type: ignore[no-untyped-def]
    seen = []
    for protocol in (2, 3):
        with redis.Redis(port=server.port, protocol=protocol) as client:
            sk = Seckill(client)
            a, b = f"{key}:a", f"{key}:b"
            client.delete(a, b)  # the same names under both protocols, so the values compare equal
            sk.init(a, 7, limit=2)
            sk.init(b, 1, limit=2)
            sk.deduct(a, "u", 2, request_id="r")
            sk.take(a, 3, "m", to=b)
            sk.add(b, 3, "m")
            seen.append((sk.info(a), sk.info(b), sk.transfers(a), sk.settle(a, "m"), sk.transfers(a)))
    assert seen[0] == seen[1]
    info_a, info_b, listed, settled, after = seen[0]
    assert info_a == ItemInfo(
        stock=2, unlimited=False, limit=2, initial=7, added=0, sold=2, refunded=0, held=0, holds=0,
        expired=0, buyers=1, requests=1, start=0, end=0, stream=None, stream_maxlen=0, moved_out=3, moved_in=0,
        stream_confirmed=False,
    )  # fmt: skip
    assert (info_b.stock, info_b.moved_out, info_b.moved_in) == (4, 0, 3)
    assert balanced(info_a) and balanced(info_b)
    assert listed[0].destination == f"{key}:b" and listed[0].units == 3
    assert (settled, after) == (SettleOutcome.SETTLED, [])


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_info_from_an_older_module(server, key: str, protocol: int) -> None:  # type: ignore[no-untyped-def]
    """A module older than transfers sends INFO without moved_out/moved_in: they read as 0.

    The reply is the real server's raw one (never wrapped), with those two fields taken out."""
    with redis.Redis(port=server.port, protocol=protocol) as raw:
        raw.execute_command("SECKILL.INIT", key, 9, "LIMIT", 3)
        raw.execute_command("SECKILL.DEDUCT", key, "u", 2)
        reply = raw.execute_command("SECKILL.INFO", key)
    newer = item_info(reply)
    assert newer is not None and newer.stock == 7
    # Fields newer modules add after moved_in (stream_confirmed, variants) go too.
    later = (b"moved_out", b"moved_in", b"stream_confirmed", b"variants")
    if protocol == 3:
        assert isinstance(reply, dict)
        older = {name: value for name, value in reply.items() if name not in later}
        assert len(older) == len(reply) - 4
    else:
        assert isinstance(reply, list)
        assert reply[-8::2] == list(later)
        older = reply[:-8]
    # Without stream_confirmed, the stream reads as trusted, as older modules held it.
    assert newer.stream_confirmed is False
    assert item_info(older) == dataclasses.replace(newer, stream_confirmed=True)
    assert newer.moved_out == newer.moved_in == 0


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipeline(r: redis.Redis, key: str, transaction: bool) -> None:
    source, destination = f"{key}:a", f"{key}:b"
    Seckill(r).init(source, 10)
    Seckill(r).init(destination, 0)
    pipe = r.pipeline(transaction=transaction)
    sk = Seckill(pipe)
    sk.take(source, 3, "m1", to=destination)
    sk.take(source, 2, "m1", to=destination)  # conflict: another quantity
    sk.transfers(source)
    sk.add(destination, 3, "m1")
    sk.settle(source, "m1")
    sk.settle(source, "nope")
    sk.take(f"{key}:missing", 1, "m1")
    sk.info(destination)
    results = sk.execute(raise_on_error=False)
    assert results[0] == 3
    assert isinstance(results[1], RequestIdConflictError) and results[1].message == CONFLICT
    assert results[2:7] == [[Transfer("m1", 3, destination)], 3, SettleOutcome.SETTLED, SettleOutcome.UNKNOWN, None]
    assert isinstance(results[7], ItemInfo) and results[7].moved_in == 3
    # The pipeline's own execute() gives the same typed values (errors stay redis-py's there).
    sk.transfers(source)
    sk.settle(source, "m1")
    assert pipe.execute() == [[], SettleOutcome.ALREADY_SETTLED]


def test_async_full_move(server, key: str, protocol: int) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            source, destination, missing = f"{key}:part:0", f"{key}:part:1", f"{key}:missing"
            assert await sk.init(source, 10) is True
            assert await sk.init(destination, 0) is True
            assert await sk.take(source, 4, "move-1", to=destination) == 4
            assert await sk.take(source, 4, "move-1", to=destination) == 4
            assert await sk.transfers(source) == [Transfer("move-1", 4, destination)]
            assert await sk.add(destination, 4, "move-1") == 4
            assert await sk.add(destination, 4, "move-1") == 4
            assert await sk.settle(source, "move-1") is SettleOutcome.SETTLED
            assert await sk.settle(source, "move-1") is SettleOutcome.ALREADY_SETTLED
            assert await sk.settle(source, "unknown") is SettleOutcome.UNKNOWN
            assert await sk.transfers(source) == []
            assert await asyncio.gather(
                sk.take(missing, 1, "m"), sk.add(missing, 1, "m"), sk.settle(missing, "m"), sk.transfers(missing)
            ) == [None, None, SettleOutcome.NO_ITEM, None]
            with pytest.raises(RequestIdConflictError):
                await sk.add(source, 4, "move-1")  # the other direction
            out, into = await sk.info(source), await sk.info(destination)
            assert (out.stock, out.moved_out, out.moved_in) == (6, 4, 0) and balanced(out)
            assert (into.stock, into.moved_out, into.moved_in) == (4, 0, 4) and balanced(into)

            async with client.pipeline(transaction=True) as pipe:
                p = seckill.asyncio.Seckill(pipe)
                p.take(source, 1, "move-2")
                p.take(source, 2, "move-2")
                p.transfers(source)
                p.settle(source, "move-2")
                results = await p.execute(raise_on_error=False)
            assert results[0] == 1 and isinstance(results[1], RequestIdConflictError)
            assert results[2:] == [[Transfer("move-2", 1, None)], SettleOutcome.SETTLED]
        finally:
            await client.aclose()

    asyncio.run(main())
