"""Typed errors, each kind a client can provoke, from the real server's replies."""

from __future__ import annotations

import asyncio
import pickle
import uuid
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from seckill import (
    ConnectionLostError,
    ErrorKind,
    InvalidArgumentError,
    NoPermissionError,
    OrderStreamError,
    RequestIdConflictError,
    Seckill,
    SeckillError,
    UnavailableError,
    WrongTypeError,
)
from seckill.errors import error_kind, typed_error


def check(error: SeckillError, cls: type[SeckillError], kind: ErrorKind, code: str, message: str) -> None:
    assert type(error) is cls
    assert isinstance(error, redis.exceptions.ResponseError)
    assert (error.kind, error.code, error.message, str(error)) == (kind, code, message, message)
    assert error.retryable is False


def test_request_id_conflict(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    sk.deduct(key, "alice", 2, request_id="order-1")
    for user, qty in (("bob", 2), ("alice", 1)):
        with pytest.raises(RequestIdConflictError) as raised:
            sk.deduct(key, user, qty, request_id="order-1")
        check(
            raised.value,
            RequestIdConflictError,
            ErrorKind.REQUEST_ID_CONFLICT,
            "ERR",
            "request id was already used by another user or for another quantity",
        )
    assert sk.get(key) == 8  # an error changes nothing


def test_wrong_type(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    admin.set(key, "not an item")
    sk = Seckill(r)
    for call in (lambda: sk.get(key), lambda: sk.deduct(key, "u"), lambda: sk.init(key, 1)):
        with pytest.raises(WrongTypeError) as raised:
            call()
        check(
            raised.value,
            WrongTypeError,
            ErrorKind.WRONG_TYPE,
            "WRONGTYPE",
            "Operation against a key holding the wrong kind of value",
        )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda sk, k: sk.deduct(k, "erin", 0), "value is out of range, must be positive"),
        (lambda sk, k: sk.init(k, -1), "stock must be a non-negative integer below 9223372036854775807, or UNLIMITED"),
        (lambda sk, k: sk.init(k, 1, limit=-1), "LIMIT must be a non-negative integer"),
        (lambda sk, k: sk.init(k, 1, ex=0), "invalid expire time in 'seckill.init' command"),
        (lambda sk, k: sk.init(k, 1, ex=5, px=5), "syntax error"),
        (lambda sk, k: sk.deduct(k, "u", 1, request_id="r", hold=5, hold_until=5), "syntax error"),
        (lambda sk, k: sk.deduct(k, "", 1), "user id must be 1 to 128 bytes"),
        (lambda sk, k: sk.deduct(k, "u", 1, request_id="x" * 129), "request id must be 1 to 128 bytes"),
        (lambda sk, k: sk.deduct(k, "u", 1, hold=5), "HOLD requires ID"),
        (lambda sk, k: sk.deduct(k, "u", 1, request_id="r", hold=0), "invalid hold time in 'seckill.deduct' command"),
        (
            lambda sk, k: sk.window(k, 5, 1),
            "START and END must be non-negative Unix times in milliseconds, END after START",
        ),
        (lambda sk, k: sk.stream(k, k), "the order stream cannot be the item's own key"),
        (lambda sk, k: sk.stream(k, f"{k}:orders", maxlen=-1), "MAXLEN must be a non-negative integer"),
        (lambda sk, k: sk.add(k, 9223372036854775807), "increment or decrement would overflow"),
        (lambda sk, k: sk.release(k), "wrong number of arguments for 'seckill.release' command"),
    ],
)
def test_invalid_argument(r: redis.Redis, key: str, call, message: str) -> None:  # type: ignore[no-untyped-def]
    sk = Seckill(r)
    sk.init(key, 10)
    with pytest.raises(InvalidArgumentError) as raised:
        call(sk, key)
    check(raised.value, InvalidArgumentError, ErrorKind.INVALID_ARGUMENT, "ERR", message)


def test_stream_in_another_slot_is_invalid(r: redis.Redis, key: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        Seckill(r).init(key, 1, stream="orders-elsewhere")
    assert raised.value.message.startswith("the order stream must hash to the item's slot")


def test_order_stream_holding_a_string(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    orders = f"{key}:orders"
    admin.set(orders, "oops")
    message = "the item's order stream key holds the wrong kind of value"
    with pytest.raises(OrderStreamError) as raised:
        sk.init(key, 10, stream=orders)
    check(raised.value, OrderStreamError, ErrorKind.ORDER_STREAM, "WRONGTYPE", message)
    # A stream key that turns into a string after INIT refuses the write itself.
    admin.delete(orders)
    sk.init(key, 10, stream=orders)
    admin.set(orders, "oops")
    with pytest.raises(OrderStreamError) as raised:
        sk.deduct(key, "alice", 1, request_id="order-1")
    check(raised.value, OrderStreamError, ErrorKind.ORDER_STREAM, "WRONGTYPE", message)
    assert sk.get(key) == 10 and sk.bought(key, "alice") == 0


@pytest.fixture
def acl_user(admin: redis.Redis, key: str) -> Iterator[str]:
    """A user that may use the item key but may not write its order stream."""
    name = f"seckill-py-{uuid.uuid4().hex[:8]}"
    admin.acl_setuser(
        name, enabled=True, passwords=["+secret"], keys=[key, f"%R~{key}:orders"], commands=["+@all"]
    )
    yield name
    admin.acl_deluser(name)


def test_no_permission(server, key: str, acl_user: str, protocol: int) -> None:  # type: ignore[no-untyped-def]
    with redis.Redis(port=server.port, username=acl_user, password="secret", protocol=protocol) as client:
        sk = Seckill(client)
        with pytest.raises(NoPermissionError) as raised:
            sk.init(key, 10, stream=f"{key}:orders")
        # INIT declares its STREAM argument as a key, so the server's own ACL check refuses it
        # before the module runs, in the server's words: Redis's, or Valkey 8's.
        message = raised.value.message
        assert message in (
            "this user has no permissions to access one of the keys used as arguments",
            "No permissions to access a key",
        )
        check(raised.value, NoPermissionError, ErrorKind.NO_PERMISSION, "NOPERM", message)
        assert isinstance(raised.value, redis.exceptions.NoPermissionError)  # still redis-py's kind too
        assert sk.init(key, 10) is True
        with pytest.raises(NoPermissionError):
            sk.stream(key, f"{key}:orders")
        with pytest.raises(NoPermissionError):
            sk.get(f"{key}:other")  # a key outside the user's patterns: Redis's own NOPERM


def test_server_state_errors_stay_redis_errors(r: redis.Redis, admin: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    sk.init(key, 10)
    admin.config_set("maxmemory", "1")
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError) as raised:
            sk.deduct(key, "u")
        assert not isinstance(raised.value, SeckillError)
        assert sk.get(key) == 10  # reads always work
    finally:
        admin.config_set("maxmemory", "0")


def test_async_errors(server, key: str, acl_user: str, protocol: int) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        limited = redis.asyncio.Redis(port=server.port, username=acl_user, password="secret", protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            await sk.init(key, 10)
            await sk.deduct(key, "alice", 1, request_id="r1")
            with pytest.raises(RequestIdConflictError):
                await sk.deduct(key, "bob", 1, request_id="r1")
            with pytest.raises(InvalidArgumentError) as raised:
                await sk.deduct(key, "bob", -1)
            assert raised.value.message == "value is out of range, must be positive"
            await client.set(f"{key}:s", "x")
            with pytest.raises(WrongTypeError):
                await sk.info(f"{key}:s")
            with pytest.raises(OrderStreamError):
                await sk.stream(key, f"{key}:s")
            with pytest.raises(NoPermissionError):
                await seckill.asyncio.Seckill(limited).stream(key, f"{key}:orders")
        finally:
            await client.aclose()
            await limited.aclose()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("code", "message", "kind"),
    [
        ("ERR", "sale item is full: it cannot record more purchases", ErrorKind.ITEM_FULL),
        ("ERR", "request id was already used by another user or for another quantity", ErrorKind.REQUEST_ID_CONFLICT),
        (
            "ERR",
            "transfer id was already used for another quantity or the other direction",
            ErrorKind.REQUEST_ID_CONFLICT,
        ),
        ("ERR", "sale item is full: it cannot record more transfers (10000 at most)", ErrorKind.ITEM_FULL),
        ("ERR", "an unlimited item moves no units", ErrorKind.INVALID_ARGUMENT),
        ("WRONGTYPE", "the item's order stream key holds the wrong kind of value", ErrorKind.ORDER_STREAM),
        ("CROSSSLOT", "the item's order stream does not hash to the item's slot", ErrorKind.ORDER_STREAM),
        ("WRONGTYPE", "Operation against a key holding the wrong kind of value", ErrorKind.WRONG_TYPE),
        ("NOPERM", "this user has no permissions", ErrorKind.NO_PERMISSION),
        ("ERR", "syntax error", ErrorKind.INVALID_ARGUMENT),
        ("OOM", "command not allowed when used memory > 'maxmemory'.", None),
        ("READONLY", "You can't write against a read only replica.", ErrorKind.UNAVAILABLE),
        ("NOREPLICAS", "Not enough good replicas to write.", ErrorKind.UNAVAILABLE),
        ("MASTERDOWN", "Link with MASTER is down and replica-serve-stale-data is set to 'no'.", ErrorKind.UNAVAILABLE),
        ("LOADING", "Redis is loading the dataset in memory", ErrorKind.UNAVAILABLE),
        ("MOVED", "3999 127.0.0.1:6381", None),
    ],
)
def test_error_kind_rules(code: str, message: str, kind: ErrorKind | None) -> None:
    """The one place that decides a kind (the full-ledger error needs 4 GiB to provoke for real)."""
    assert error_kind(code, message) is kind


def test_redis_py_errors_that_mean_unavailable() -> None:
    """redis-py's own classes for the replies and failures that make a call unavailable (LOADING
    lasts only while a server loads its data, too briefly to catch here; the tests in
    test_durable.py provoke the others for real)."""
    loading = typed_error(redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory"))
    assert type(loading) is UnavailableError
    assert (loading.code, loading.message, loading.retryable) == ("LOADING", "Redis is loading the dataset in memory", True)
    lost = typed_error(redis.exceptions.ConnectionError("Connection closed by server."))
    assert type(lost) is ConnectionLostError and isinstance(lost, redis.exceptions.ConnectionError)
    assert (lost.kind, lost.code, lost.message, lost.retryable) == (
        ErrorKind.UNAVAILABLE,
        "",
        "Connection closed by server.",
        True,
    )
    # A failed login or a timeout is not a lost connection: they stay redis-py's.
    assert typed_error(redis.exceptions.AuthenticationError("invalid username-password pair")) is None
    assert typed_error(redis.exceptions.TimeoutError("Timeout reading from socket")) is None
    for error in (loading, lost):
        copy = pickle.loads(pickle.dumps(error))
        assert (type(copy), copy.code, copy.message) == (type(error), error.code, error.message)
