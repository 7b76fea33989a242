"""Pipelines and MULTI/EXEC transactions: typed values and typed errors, sync and asyncio."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from seckill import (
    ConfirmOutcome,
    DeductResult,
    Hold,
    InvalidArgumentError,
    ItemInfo,
    OrderState,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    RequestStatus,
    Seckill,
    SeckillError,
    WrongTypeError,
)

FAR_FUTURE_MS = 4102444800000


def queue_sale(sk: Seckill | seckill.asyncio.Seckill, pipe, key: str) -> None:  # type: ignore[no-untyped-def]
    """Queue a sale mixing SECKILL commands, plain commands and errors of both."""
    sk.init(key, 3, limit=2)
    pipe.set(f"{key}:plain", "1")
    sk.deduct(key, "alice", 2, request_id="o1", hold_until=FAR_FUTURE_MS)
    sk.deduct(key, "bob", 2, request_id="o1")  # request id conflict
    pipe.lpush(f"{key}:plain", "x")  # WRONGTYPE of a plain command: stays redis-py's error
    sk.deduct(key, "bob", 0)  # invalid argument
    sk.holds(key)
    sk.confirm(key, "o1")
    sk.deduct(key, "carol", 2)
    sk.info(key)
    sk.get(f"{key}:plain")  # the item key holds a string


def check_sale(results: list, key: str) -> None:  # type: ignore[type-arg]
    assert len(results) == 11
    assert results[0] is True
    assert results[1] is True
    assert results[2] == DeductResult(Outcome.BOUGHT, 1, FAR_FUTURE_MS)
    assert isinstance(results[3], RequestIdConflictError)
    assert isinstance(results[4], redis.exceptions.ResponseError) and not isinstance(results[4], SeckillError)
    assert isinstance(results[5], InvalidArgumentError)
    assert results[5].message == "value is out of range, must be positive"
    assert results[6] == [Hold("o1", "alice", 2, FAR_FUTURE_MS)]
    assert results[7] is ConfirmOutcome.CONFIRMED
    assert results[8] == DeductResult(Outcome.SOLD_OUT)
    assert isinstance(results[9], ItemInfo) and (results[9].sold, results[9].held) == (2, 0)
    assert isinstance(results[10], WrongTypeError)


def queue_holds_and_refunds(  # type: ignore[no-untyped-def]
    sk: Seckill | seckill.asyncio.Seckill, pipe, key: str
) -> None:
    """Queue holds with their deadlines, and confirms and refunds that tell why they did nothing;
    then the same commands raw, without WITHDEADLINE or DETAIL."""
    sk.init(key, 5)
    sk.deduct(key, "ann", 1, request_id="h1", hold_until=FAR_FUTURE_MS)
    sk.deduct(key, "bob", 2, request_id="p1")  # no hold: no deadline
    sk.deduct(key, "cy", 1, request_id="h2", hold=600)
    sk.status(key, "h2")
    sk.release(key, "h2")
    sk.refund(key, "p1")
    sk.refund(key, "p1")
    sk.refund(key, "h2")
    sk.refund(key, "never")
    sk.confirm(key, "h1")
    sk.confirm(key, "p1")
    sk.confirm(key, "h2")
    sk.confirm(key, "never")
    pipe.execute_command("SECKILL.DEDUCT", key, "dee", 1, "ID", "h3", "HOLD", 600)
    pipe.execute_command("SECKILL.CONFIRM", key, "never")
    pipe.execute_command("SECKILL.REFUND", key, "never")


def check_holds_and_refunds(results: list) -> None:  # type: ignore[type-arg]
    assert len(results) == 17
    assert results[:3] == [True, DeductResult(Outcome.BOUGHT, 4, FAR_FUTURE_MS), DeductResult(Outcome.BOUGHT, 2)]
    held, state = results[3:5]
    assert isinstance(state, OrderState) and state.status is RequestStatus.HELD
    assert held == DeductResult(Outcome.BOUGHT, 1, state.deadline)
    assert results[5:] == [
        1,
        RefundResult(RefundOutcome.REFUNDED, 2),
        RefundResult(RefundOutcome.ALREADY_REFUNDED),
        RefundResult(RefundOutcome.LAPSED),
        RefundResult(RefundOutcome.UNKNOWN_REQUEST),
        ConfirmOutcome.CONFIRMED,
        ConfirmOutcome.REFUNDED,
        ConfirmOutcome.LAPSED,
        ConfirmOutcome.UNKNOWN_REQUEST,
        DeductResult(Outcome.BOUGHT, 3),  # the integer reply: no deadline asked for
        ConfirmOutcome.CANCELLED,
        RefundResult(RefundOutcome.NOTHING),
    ]


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipeline_holds_deadlines_and_why_nothing_was_done(r: redis.Redis, key: str, transaction: bool) -> None:
    with r.pipeline(transaction=transaction) as pipe:
        sk = Seckill(pipe)
        queue_holds_and_refunds(sk, pipe, key)
        check_holds_and_refunds(sk.execute())


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_async_pipeline_holds_deadlines_and_why_nothing_was_done(  # type: ignore[no-untyped-def]
    server, key: str, protocol: int, transaction: bool
) -> None:
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            async with client.pipeline(transaction=transaction) as pipe:
                sk = seckill.asyncio.Seckill(pipe)
                queue_holds_and_refunds(sk, pipe, key)
                check_holds_and_refunds(await sk.execute())
        finally:
            await client.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipeline(r: redis.Redis, key: str, transaction: bool) -> None:
    pipe = r.pipeline(transaction=transaction)
    sk = Seckill(pipe)
    queue_sale(sk, pipe, key)
    check_sale(sk.execute(raise_on_error=False), key)
    # The pipeline is reusable, and raising gives the first error, typed.
    sk.get(key)
    sk.deduct(key, "dave", 1, request_id="o1")
    sk.deduct(key, "dave", 0)
    with pytest.raises(RequestIdConflictError) as raised:
        sk.execute()
    assert "(command #2 of the pipeline)" in raised.value.__notes__
    assert Seckill(r).bought(key, "dave") == 0


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipeline_own_execute_gives_typed_values(r: redis.Redis, key: str, transaction: bool) -> None:
    with r.pipeline(transaction=transaction) as pipe:
        sk = Seckill(pipe)
        assert sk.init(key, 5) is pipe  # queued: the pipeline comes back, as with redis-py's commands
        sk.deduct(key, "u", 2, request_id="r")
        pipe.incr(f"{key}:n")
        sk.info(key)
        init, deduct, incr, info = pipe.execute()
    assert (init, deduct, incr) == (True, DeductResult(Outcome.BOUGHT, 3), 1)
    assert isinstance(info, ItemInfo) and info.stock == 3


def test_pipeline_run_elsewhere_forgets_positions(r: redis.Redis, key: str) -> None:
    pipe = r.pipeline(transaction=False)
    sk = Seckill(pipe)
    sk.init(key, 1)
    sk.get(key)
    pipe.execute()  # run without the Seckill: its notes are about that batch
    pipe.lpush(key, "x")  # a plain command's error now sits where a SECKILL command was
    sk.get(key)
    results = sk.execute(raise_on_error=False)
    assert not isinstance(results[0], SeckillError) and isinstance(results[0], redis.exceptions.ResponseError)
    assert results[1] == 1


def test_watch_then_multi(r: redis.Redis, key: str) -> None:
    Seckill(r).init(key, 5)
    with r.pipeline() as pipe:
        pipe.watch(key)
        sk = Seckill(pipe)
        stock = sk.get(key)  # run at once while watching
        assert stock == 5
        with pytest.raises(InvalidArgumentError):
            sk.deduct(key, "u", 0)
        pipe.multi()
        sk.deduct(key, "u", stock)
        assert sk.execute() == [DeductResult(Outcome.BOUGHT, 0)]


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_async_pipeline(server, key: str, protocol: int, transaction: bool) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            pipe = client.pipeline(transaction=transaction)
            sk = seckill.asyncio.Seckill(pipe)
            queue_sale(sk, pipe, key)
            check_sale(await sk.execute(raise_on_error=False), key)
            await sk.deduct(key, "dave", 0)  # awaiting a queued command is allowed, as in redis-py
            with pytest.raises(InvalidArgumentError):
                await sk.execute()
            async with client.pipeline(transaction=transaction) as pipe2:
                sk2 = seckill.asyncio.Seckill(pipe2)
                sk2.get(key)
                sk2.bought(key, "alice")
                assert await pipe2.execute() == [1, 2]
        finally:
            await client.aclose()

    asyncio.run(main())
