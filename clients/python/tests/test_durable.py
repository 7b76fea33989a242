"""Durable writes (the write and a WAIT in one round trip on one connection) and the unavailable
error kind, against a real master and its real replica, sync and asyncio."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
import redis
import redis.asyncio
import redis.asyncio.retry
from redis.backoff import NoBackoff
from redis.retry import Retry

import seckill.asyncio
from seckill import (
    ConfirmOutcome,
    ConnectionLostError,
    DeductResult,
    Durable,
    ErrorKind,
    InvalidArgumentError,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    Seckill,
    SeckillError,
    UnavailableError,
)
from servers import Server, free_port

HOLD_SECONDS = 3  # long enough for the steps before the deadline, short enough to wait out
DURABLE_MS = 10_000  # WAIT returns as soon as the replica acknowledges; this only bounds a failure
SHORT_MS = 200  # how long a WAIT may block on a paused replica before it answers 0


@contextmanager
def paused(replica: Server) -> Iterator[None]:
    """The replica stops applying its master's stream, so WAIT on the master answers 0.

    ``CLIENT PAUSE ... WRITE`` pauses that stream as ``ALL`` does, but lets ``CLIENT UNPAUSE``
    through: under ``ALL``, Redis 7.0 holds the UNPAUSE itself back until the pause ends.
    """
    with replica.client() as client:
        client.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        try:
            yield
        finally:
            client.execute_command("CLIENT", "UNPAUSE")


def promote(master: Server, replica: Server) -> None:
    """The failover: the master dies and its replica becomes the master."""
    master.stop()
    with replica.client() as client:
        client.execute_command("REPLICAOF", "NO", "ONE")


def sleep_past(deadline_ms: int) -> None:
    """Wait out a hold's deadline (Unix ms); the servers run on this machine's clock."""
    time.sleep(max(0.0, deadline_ms / 1000 - time.time()) + 0.1)


def check_unavailable(error: SeckillError, code: str, message: str) -> None:
    assert type(error) is UnavailableError
    assert isinstance(error, redis.exceptions.ResponseError)
    assert (error.kind, error.code, error.message) == (ErrorKind.UNAVAILABLE, code, message)
    assert error.retryable is True


def until(condition) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.01)


def client_waiting(server: Server) -> int | None:
    """The id of a client blocked in WAIT on ``server``, if there is one (``cmd`` alone is the last
    command of a client, blocked or not)."""
    with server.client() as client:
        for entry in client.client_list():
            if entry.get("cmd") == "wait" and "b" in entry.get("flags", ""):
                return int(entry["id"])
    return None


# --- a payment confirmed durably survives a failover ------------------------------------------


def test_a_paid_hold_confirmed_durably_is_still_sold_after_a_failover(
    replicated: tuple[Server, Server], key: str, protocol: int
) -> None:
    master, replica = replicated
    with redis.Redis(port=master.port, protocol=protocol) as client:
        sk = Seckill(client)
        sk.init(key, 10, limit=2)
        held = sk.deduct(
            key, "alice", 2, request_id="h1", hold=HOLD_SECONDS, wait_replicas=1, wait_timeout_ms=DURABLE_MS
        )
        assert held == Durable(DeductResult(Outcome.BOUGHT, 8, held.result.deadline), replicas=1, durable=True)
        unpaid = sk.deduct(
            key, "bob", 1, request_id="h2", hold=HOLD_SECONDS, wait_replicas=1, wait_timeout_ms=DURABLE_MS
        )
        assert unpaid.durable
        holds = sk.holds(key)
        assert holds is not None
        # The deadlines the holds got back are the ones the item keeps.
        assert {hold.request_id: hold.deadline for hold in holds} == {
            "h1": held.result.deadline,
            "h2": unpaid.result.deadline,
        }
        deadline = max(hold.deadline for hold in holds)

        with paused(replica):
            paid = sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=SHORT_MS)
        assert paid == Durable(ConfirmOutcome.CONFIRMED, replicas=0, durable=False)
        # Too few replicas have it: keep the payment and send the same CONFIRM again.
        again = sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=DURABLE_MS)
        assert again == Durable(ConfirmOutcome.ALREADY_FINAL, replicas=1, durable=True)

    promote(master, replica)
    sleep_past(deadline)
    with redis.Redis(port=replica.port, protocol=protocol) as client:
        promoted = Seckill(client)
        assert promoted.bought(key, "alice") == 2
        assert promoted.confirm(key, "h1") is ConfirmOutcome.ALREADY_FINAL
        # The hold nobody paid for lapsed there: the deadline did pass.
        assert promoted.bought(key, "bob") == 0
        assert promoted.confirm(key, "h2") is ConfirmOutcome.LAPSED


def test_async_a_paid_hold_confirmed_durably_is_still_sold_after_a_failover(
    replicated: tuple[Server, Server], key: str, protocol: int
) -> None:
    master, replica = replicated

    async def pay() -> int:
        client = redis.asyncio.Redis(port=master.port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            await sk.init(key, 10, limit=2)
            held = await sk.deduct(
                key, "alice", 2, request_id="h1", hold=HOLD_SECONDS, wait_replicas=1, wait_timeout_ms=DURABLE_MS
            )
            assert held == Durable(DeductResult(Outcome.BOUGHT, 8, held.result.deadline), replicas=1, durable=True)
            assert held.result.deadline is not None
            unpaid = await sk.deduct(
                key, "bob", 1, request_id="h2", hold=HOLD_SECONDS, wait_replicas=1, wait_timeout_ms=DURABLE_MS
            )
            assert unpaid.durable
            holds = await sk.holds(key)
            assert holds is not None
            with paused(replica):
                paid = await sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=SHORT_MS)
            assert paid == Durable(ConfirmOutcome.CONFIRMED, replicas=0, durable=False)
            again = await sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=DURABLE_MS)
            assert again == Durable(ConfirmOutcome.ALREADY_FINAL, replicas=1, durable=True)
            return max(hold.deadline for hold in holds)
        finally:
            await client.aclose()

    async def check_promoted() -> None:
        client = redis.asyncio.Redis(port=replica.port, protocol=protocol)
        try:
            promoted = seckill.asyncio.Seckill(client)
            assert await promoted.bought(key, "alice") == 2
            assert await promoted.confirm(key, "h1") is ConfirmOutcome.ALREADY_FINAL
            assert await promoted.bought(key, "bob") == 0
            assert await promoted.confirm(key, "h2") is ConfirmOutcome.LAPSED
        finally:
            await client.aclose()

    deadline = asyncio.run(pay())
    promote(master, replica)
    sleep_past(deadline)
    asyncio.run(check_promoted())


def test_a_refund_with_a_wait_is_on_the_replica_when_durable(
    replicated: tuple[Server, Server], key: str, protocol: int
) -> None:
    master, replica = replicated
    with (
        redis.Redis(port=master.port, protocol=protocol) as client,
        redis.Redis(port=replica.port, protocol=protocol) as on_replica,
    ):
        sk = Seckill(client)
        sk.init(key, 10)
        sk.deduct(key, "alice", 3, request_id="o1")
        refunded = RefundResult(RefundOutcome.REFUNDED, 3)
        assert sk.refund(key, "o1", wait_replicas=1, wait_timeout_ms=DURABLE_MS) == Durable(refunded, 1, True)
        info = Seckill(on_replica).info(key)
        assert info is not None and (info.stock, info.refunded) == (10, 3)
        # Sent again (say the reply was lost): nothing more is given back, and it is durable.
        again = RefundResult(RefundOutcome.ALREADY_REFUNDED)
        assert sk.refund(key, "o1", wait_replicas=1, wait_timeout_ms=DURABLE_MS) == Durable(again, 1, True)
        # A refund the replica has not applied is not durable, and neither is its repeat: the
        # repeat's WAIT waits for the first call, whatever connection it comes on.
        sk.deduct(key, "bob", 2, request_id="o2")
        with paused(replica):
            first = sk.refund(key, "o2", wait_replicas=1, wait_timeout_ms=SHORT_MS)
            repeat = sk.refund(key, "o2", wait_replicas=1, wait_timeout_ms=SHORT_MS)
        assert first == Durable(RefundResult(RefundOutcome.REFUNDED, 2), 0, False)
        assert repeat == Durable(RefundResult(RefundOutcome.ALREADY_REFUNDED), 0, False)


# --- a wait on the standalone test server, which has no replica ---------------------------------


def test_a_wait_gives_the_usual_result_and_what_wait_answered(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    assert sk.deduct(key, "alice", wait_replicas=0) == Durable(DeductResult(Outcome.BOUGHT, 9), 0, True)
    held = sk.deduct(key, "bob", request_id="o2", hold=60, wait_replicas=1, wait_timeout_ms=1)
    assert held == Durable(DeductResult(Outcome.BOUGHT, 8, sk.status(key, "o2").deadline), 0, False)
    assert held.result.deadline is not None
    assert sk.confirm(key, "o2", wait_replicas=0) == Durable(ConfirmOutcome.CONFIRMED, 0, True)
    missing = f"{key}:missing"
    assert sk.deduct(missing, "carol", wait_replicas=0) == Durable(DeductResult(Outcome.NO_ITEM), 0, True)
    assert sk.confirm(missing, "o2", wait_replicas=0) == Durable(ConfirmOutcome.NO_ITEM, 0, True)
    assert sk.refund(missing, "o2", wait_replicas=0) == Durable(RefundResult(RefundOutcome.NO_ITEM), 0, True)
    # Without a wait, the values are exactly the usual ones.
    assert sk.confirm(key, "o2") is ConfirmOutcome.ALREADY_FINAL
    assert sk.refund(key, "o2") == RefundResult(RefundOutcome.REFUNDED, 1)
    assert sk.confirm(key, "o2", wait_replicas=0) == Durable(ConfirmOutcome.REFUNDED, 0, True)


def test_an_error_of_the_command_is_raised_typed_despite_the_wait(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    sk.deduct(key, "alice", 1, request_id="o1")
    with pytest.raises(RequestIdConflictError):
        sk.deduct(key, "bob", 1, request_id="o1", wait_replicas=0)
    with pytest.raises(InvalidArgumentError) as raised:
        sk.deduct(key, "bob", 0, wait_replicas=0)
    assert raised.value.message == "value is out of range, must be positive"
    assert sk.get(key) == 9


def test_wait_arguments_are_checked_before_anything_is_sent(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    with pytest.raises(TypeError, match="wait_replicas must be an int"):
        sk.deduct(key, "alice", wait_replicas="1")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="wait_replicas must be an int"):
        sk.confirm(key, "o1", wait_replicas=True)
    with pytest.raises(TypeError, match="wait_timeout_ms must be an int"):
        sk.refund(key, "o1", wait_replicas=1, wait_timeout_ms=0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="wait_replicas must be 0 or more"):
        sk.deduct(key, "alice", wait_replicas=-1)
    with pytest.raises(ValueError, match="WAIT with 0 blocks for ever"):
        sk.deduct(key, "alice", wait_replicas=1, wait_timeout_ms=0)
    assert sk.get(key) == 10


@pytest.fixture
def user_without_wait(admin: redis.Redis, key: str) -> Iterator[str]:
    name = f"seckill-py-{uuid.uuid4().hex[:8]}"
    admin.acl_setuser(name, enabled=True, passwords=["+secret"], keys=[key], commands=["+@all", "-wait"])
    yield name
    admin.acl_deluser(name)


def test_an_error_of_wait_itself_is_raised_with_what_the_write_replied(
    server: Server, key: str, user_without_wait: str, protocol: int
) -> None:
    with redis.Redis(port=server.port, username=user_without_wait, password="secret", protocol=protocol) as client:
        sk = Seckill(client)
        sk.init(key, 10)
        sk.deduct(key, "alice", 1, request_id="o1", hold=60)
        with pytest.raises(redis.exceptions.NoPermissionError) as raised:
            sk.confirm(key, "o1", wait_replicas=0)
        assert not isinstance(raised.value, SeckillError)  # not an error of the SECKILL command
        assert "(the WAIT after SECKILL.CONFIRM, which replied <ConfirmOutcome.CONFIRMED: 1>)" in raised.value.__notes__
        assert sk.confirm(key, "o1") is ConfirmOutcome.ALREADY_FINAL  # the write was done


# --- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_a_wait_in_a_pipeline_is_refused(r: redis.Redis, key: str, transaction: bool) -> None:
    with r.pipeline(transaction=transaction) as pipe:
        sk = Seckill(pipe)
        for call in (
            lambda: sk.deduct(key, "alice", request_id="o1", wait_replicas=1),
            lambda: sk.confirm(key, "o1", wait_replicas=1),
            lambda: sk.refund(key, "o1", wait_replicas=0),
        ):
            with pytest.raises(TypeError, match="wait_replicas needs a client, not a pipeline"):
                call()
        assert len(pipe) == 0  # nothing queued
        sk.deduct(key, "alice")  # without a wait it queues as ever
        assert sk.execute() == [DeductResult(Outcome.NO_ITEM)]


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_async_a_wait_in_a_pipeline_is_refused_before_any_await(
    server: Server, key: str, protocol: int, transaction: bool
) -> None:
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            async with client.pipeline(transaction=transaction) as pipe:
                sk = seckill.asyncio.Seckill(pipe)
                with pytest.raises(TypeError, match="wait_replicas needs a client, not a pipeline"):
                    sk.confirm(key, "o1", wait_replicas=1)
                with pytest.raises(TypeError, match="wait_replicas needs a client, not a pipeline"):
                    sk.deduct(key, "alice", wait_replicas=1)
                assert len(pipe) == 0
        finally:
            await client.aclose()

    asyncio.run(main())


def test_a_wait_on_a_cluster_client_is_refused(
    rc: redis.RedisCluster, cluster_nodes: list[Server], key: str, protocol: int
) -> None:
    sk = Seckill(rc)
    sk.init(key, 10)
    with pytest.raises(TypeError, match="wait_replicas needs a standalone client"):
        sk.deduct(key, "alice", 1, request_id="o1", wait_replicas=1)
    assert sk.get(key) == 10  # nothing was sent

    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[0].port, protocol=protocol)
        try:
            with pytest.raises(TypeError, match="wait_replicas needs a standalone client"):
                seckill.asyncio.Seckill(client).refund(key, "o1", wait_replicas=1)
        finally:
            await client.aclose()

    asyncio.run(main())


# --- the unavailable kind --------------------------------------------------------------------------


def test_a_master_short_of_replicas_refuses_writes_as_unavailable(
    master_short_of_replicas: Server, key: str, protocol: int
) -> None:
    server = master_short_of_replicas
    with redis.Redis(port=server.port, protocol=protocol) as client, server.client() as admin:
        sk = Seckill(client)
        with pytest.raises(UnavailableError) as raised:
            sk.init(key, 10)
        check_unavailable(raised.value, "NOREPLICAS", "Not enough good replicas to write.")
        assert sk.get(key) is None  # reads still work
        admin.config_set("min-replicas-to-write", 0)
        sk.init(key, 10)
        admin.config_set("min-replicas-to-write", 1)
        for call in (
            lambda: sk.deduct(key, "alice", 1, request_id="o1"),
            lambda: sk.deduct(key, "alice", 1, request_id="o1", wait_replicas=1),
            lambda: sk.refund(key, "o1", wait_replicas=1),
        ):
            with pytest.raises(UnavailableError) as raised:
                call()
            check_unavailable(raised.value, "NOREPLICAS", "Not enough good replicas to write.")
        assert (sk.get(key), sk.bought(key, "alice")) == (10, 0)  # nothing changed


def test_a_write_sent_to_a_replica_is_unavailable(replicated: tuple[Server, Server], key: str, protocol: int) -> None:
    master, replica = replicated
    with (
        redis.Redis(port=master.port, protocol=protocol) as client,
        redis.Redis(port=replica.port, protocol=protocol) as on_replica,
    ):
        Seckill(client).init(key, 10)
        assert Seckill(client).deduct(key, "alice", 1, request_id="o1", wait_replicas=1, wait_timeout_ms=DURABLE_MS).durable
        sk = Seckill(on_replica)
        for call in (
            lambda: sk.deduct(key, "bob", 1, request_id="o2"),
            lambda: sk.deduct(key, "bob", 1, request_id="o2", wait_replicas=1),  # WAIT's own error is dropped
            lambda: sk.confirm(key, "o1", wait_replicas=1),
        ):
            with pytest.raises(UnavailableError) as raised:
                call()
            check_unavailable(raised.value, "READONLY", "You can't write against a read only replica.")
        assert (sk.get(key), sk.bought(key, "bob")) == (9, 0)


def test_a_replica_cut_off_from_its_master_is_unavailable(
    replicated: tuple[Server, Server], key: str, protocol: int
) -> None:
    master, replica = replicated
    with replica.client() as admin:
        admin.config_set("replica-serve-stale-data", "no")
        master.stop()
        until(lambda: admin.info("replication")["master_link_status"] == "down")
    with redis.Redis(port=replica.port, protocol=protocol) as on_replica, pytest.raises(UnavailableError) as raised:
        Seckill(on_replica).get(key)
    assert raised.value.code == "MASTERDOWN" and raised.value.retryable
    assert raised.value.message.startswith("Link with MASTER is down")


def check_connection_lost(error: ConnectionLostError) -> None:
    assert type(error) is ConnectionLostError
    assert isinstance(error, UnavailableError) and isinstance(error, redis.exceptions.ConnectionError)
    assert (error.kind, error.code, error.retryable) == (ErrorKind.UNAVAILABLE, "", True)
    assert isinstance(error.__cause__, redis.exceptions.ConnectionError)
    assert not isinstance(error.__cause__, SeckillError)
    assert error.message == str(error.__cause__)


def test_a_connection_lost_during_the_wait_is_unavailable_and_a_retry_is_safe(
    replicated: tuple[Server, Server], key: str, protocol: int
) -> None:
    master, replica = replicated
    # No retries by redis-py itself, so that the lost connection reaches the caller.
    with redis.Redis(port=master.port, protocol=protocol, retry=Retry(NoBackoff(), 0)) as client:
        sk = Seckill(client)
        sk.init(key, 10)
        sk.deduct(key, "alice", 2, request_id="h1", hold=600, wait_replicas=1, wait_timeout_ms=DURABLE_MS)
        with paused(replica), ThreadPoolExecutor(1) as pool:
            call = pool.submit(lambda: sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=60_000))
            until(lambda: client_waiting(master) is not None)
            with master.client() as admin:
                admin.client_kill_filter(_id=client_waiting(master))
            with pytest.raises(ConnectionLostError) as raised:
                call.result()
        check_connection_lost(raised.value)
        # The CONFIRM had been done; sending it again says so, and now the replica has it.
        again = sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=DURABLE_MS)
        assert again == Durable(ConfirmOutcome.ALREADY_FINAL, replicas=1, durable=True)


def test_a_server_that_cannot_be_reached_is_unavailable(key: str) -> None:
    port = free_port(set())  # nothing listens there
    with redis.Redis(port=port, retry=Retry(NoBackoff(), 0)) as client:
        with pytest.raises(ConnectionLostError) as raised:
            Seckill(client).get(key)
        check_connection_lost(raised.value)
        with client.pipeline(transaction=False) as pipe:
            queued = Seckill(pipe)
            queued.deduct(key, "alice", 1, request_id="o1")
            with pytest.raises(ConnectionLostError) as raised:
                queued.execute()
            check_connection_lost(raised.value)
            pipe.get(key)
            with pytest.raises(redis.exceptions.ConnectionError) as plain:
                queued.execute()  # no SECKILL command in the batch: redis-py's error as it is
            assert not isinstance(plain.value, SeckillError)

    async def main() -> None:
        client = redis.asyncio.Redis(port=port, retry=redis.asyncio.retry.Retry(NoBackoff(), 0))
        try:
            with pytest.raises(ConnectionLostError) as raised:
                await seckill.asyncio.Seckill(client).confirm(key, "o1", wait_replicas=1)
            check_connection_lost(raised.value)
        finally:
            await client.aclose()

    asyncio.run(main())


def test_async_unavailable_errors(
    replicated: tuple[Server, Server], master_short_of_replicas: Server, key: str, protocol: int
) -> None:
    master, replica = replicated

    async def main() -> None:
        no_retry = redis.asyncio.retry.Retry(NoBackoff(), 0)
        client = redis.asyncio.Redis(port=master.port, protocol=protocol, retry=no_retry)
        on_replica = redis.asyncio.Redis(port=replica.port, protocol=protocol)
        short = redis.asyncio.Redis(port=master_short_of_replicas.port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            await sk.init(key, 10)
            await sk.deduct(key, "alice", 2, request_id="h1", hold=600, wait_replicas=1, wait_timeout_ms=DURABLE_MS)
            with pytest.raises(UnavailableError) as raised:
                await seckill.asyncio.Seckill(on_replica).confirm(key, "h1", wait_replicas=1)
            check_unavailable(raised.value, "READONLY", "You can't write against a read only replica.")
            with pytest.raises(UnavailableError) as raised:
                await seckill.asyncio.Seckill(short).init(key, 10)
            check_unavailable(raised.value, "NOREPLICAS", "Not enough good replicas to write.")

            with paused(replica):
                call = asyncio.ensure_future(sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=60_000))
                for _ in range(2000):
                    if client_waiting(master) is not None:
                        break
                    await asyncio.sleep(0.01)
                with master.client() as admin:
                    admin.client_kill_filter(_id=client_waiting(master))
                with pytest.raises(ConnectionLostError) as lost:
                    await call
            check_connection_lost(lost.value)
            again = await sk.confirm(key, "h1", wait_replicas=1, wait_timeout_ms=DURABLE_MS)
            assert again == Durable(ConfirmOutcome.ALREADY_FINAL, replicas=1, durable=True)
        finally:
            await client.aclose()
            await on_replica.aclose()
            await short.aclose()

    asyncio.run(main())
