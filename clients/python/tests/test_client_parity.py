"""The same library over every client library it wraps: redis-py, valkey-py (sync and asyncio) and
Valkey GLIDE (sync and asyncio). Each test runs once per kind, against real servers: every method
gives the same typed value; every error the contract can provoke, raised through the kind's own
client, is typed as the same kind with the same code and message; pipelines and batches are
typed; a 3-master cluster takes 1,000 calls with no MOVED; a wait goes to the item's master.
The rest of the suite runs over redis-py alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import glide_shared.exceptions as glide_exceptions
import pytest
import redis

import seckill
import servers
from client_kinds import ClientKind, all_kinds, quiet_glide
from seckill import (
    UNLIMITED,
    UNLIMITED_STOCK,
    BuyerRecord,
    ConfirmOutcome,
    ConnectionLostError,
    DeductResult,
    Durable,
    ErrorKind,
    Hold,
    InvalidArgumentError,
    OrderConfirmation,
    OrderResult,
    OrderState,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    RequestRecord,
    RequestStatus,
    SeckillError,
    SettleOutcome,
    Transfer,
    WrongTypeError,
)
from seckill.errors import typed_error
from test_contract import PROVOCABLE, command, provoke_with

FAR_FUTURE_MS = 4102444800000
KINDS = all_kinds()


@pytest.fixture(scope="module", params=KINDS, ids=lambda kind: kind.name)
def kind(request: pytest.FixtureRequest) -> Iterator[ClientKind]:
    quiet_glide()
    yield request.param


def teardown_module() -> None:
    for each in KINDS:
        each.close_loop()


class Clients:
    """The clients a test made, closed at its end."""

    def __init__(self, kind: ClientKind) -> None:
        self.kind = kind
        self.made: list[Any] = []

    def keep(self, client: Any) -> Any:
        self.made.append(client)
        return client

    def close(self) -> None:
        for client in self.made:
            self.kind.close(client)


@pytest.fixture
def clients(kind: ClientKind) -> Iterator[Clients]:
    made = Clients(kind)
    yield made
    made.close()


# ---- every method ----------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_every_method_gives_the_same_typed_value(
    kind: ClientKind, clients: Clients, server: servers.Server, key: str, protocol: int
) -> None:
    run = kind.run
    sk = kind.seckill(clients.keep(kind.standalone(server.port, protocol)))
    a, b, part, sizes, endless = (f"{key}:{name}" for name in ("a", "b", "part", "sizes", "endless"))

    assert run(sk.init(key, 10, limit=3, stream=f"{key}:orders")) is True
    assert run(sk.init(key, 10)) is False
    assert run(sk.deduct(key, "ann", 2, request_id="r1")) == DeductResult(Outcome.BOUGHT, 8)
    assert run(sk.deduct(key, "ann", 2, request_id="r2")) == DeductResult(Outcome.LIMIT_REACHED)
    assert run(sk.deduct(key, "bob", 1, request_id="h1", hold_until=FAR_FUTURE_MS)) == DeductResult(
        Outcome.BOUGHT, 7, FAR_FUTURE_MS
    )
    assert run(sk.status(key, "h1")) == OrderState(RequestStatus.HELD, "bob", 1, FAR_FUTURE_MS)
    assert run(sk.holds(key)) == [Hold("h1", "bob", 1, FAR_FUTURE_MS)]
    assert run(sk.confirm(key, "h1")) is ConfirmOutcome.CONFIRMED
    assert run(sk.deduct(key, "cy", 1, request_id="h2", hold_until=FAR_FUTURE_MS)).stock == 6
    assert run(sk.release(key, "h2")) == 1
    assert run(sk.confirm(key, "h2")) is ConfirmOutcome.LAPSED
    assert run(sk.refund(key, "r1")) == RefundResult(RefundOutcome.REFUNDED, 2)
    assert run(sk.refund(key, "r1")) == RefundResult(RefundOutcome.ALREADY_REFUNDED)
    assert (run(sk.get(key)), run(sk.bought(key, "bob")), run(sk.bought(key, "ann"))) == (9, 1, 0)
    assert run(sk.add(key, 1)) == 10
    assert run(sk.window(key, 0, 0)) is True
    info = run(sk.info(key))
    assert (info.stock, info.limit, info.sold, info.refunded, info.buyers, info.stream) == (
        10, 3, 4, 2, 1, f"{key}:orders",
    )  # fmt: skip
    assert run(sk.stream(key)) is True
    assert run(sk.info(key)).stream is None

    cursor, records = run(sk.scan(key, 0, count=100))
    assert cursor == 0 and BuyerRecord("bob", 1) in records
    assert RequestRecord("h1", "bob", 1, RequestStatus.CONFIRMED, FAR_FUTURE_MS) in records
    if kind.is_async:
        scanned = run(_collect(sk.scan_iter(key, count=2)))
    else:
        scanned = list(sk.scan_iter(key, count=2))
    assert sorted(map(repr, scanned)) == sorted(map(repr, records))

    assert run(sk.init(a, 5)) and run(sk.init(b, 5))
    lines = [(a, 1), (b, 2)]
    assert run(sk.order(lines, "dan", "o1", hold_until=FAR_FUTURE_MS)) == OrderResult(
        True, (DeductResult(Outcome.BOUGHT, 4), DeductResult(Outcome.BOUGHT, 3)), FAR_FUTURE_MS
    )
    assert run(sk.confirm_order([a, b], "o1")) == OrderConfirmation(
        True, (ConfirmOutcome.CONFIRMED, ConfirmOutcome.CONFIRMED)
    )
    assert run(sk.refund_order([a, b], "o1")) == [
        RefundResult(RefundOutcome.REFUNDED, 1),
        RefundResult(RefundOutcome.REFUNDED, 2),
    ]

    assert run(sk.init(part, 0))
    assert run(sk.take(a, 2, "t1", to=part)) == 2
    assert run(sk.transfers(a)) == [Transfer("t1", 2, part)]
    assert run(sk.add(part, 2, "t1")) == 2
    assert run(sk.settle(a, "t1")) is SettleOutcome.SETTLED

    assert run(sk.init(sizes, {"42": 2, "43": 1}, limit=1))
    assert run(sk.deduct(sizes, "eve", request_id="v1", variant="43")) == DeductResult(Outcome.BOUGHT, 0)
    assert (run(sk.get(sizes)), run(sk.get(sizes, variant="42"))) == (2, 2)
    assert run(sk.status(sizes, "v1")).variant == "43"

    assert run(sk.init(endless, UNLIMITED))
    assert run(sk.get(endless)) == UNLIMITED_STOCK
    assert run(sk.info(endless)).unlimited is True
    assert run(sk.get(f"{key}:none")) is None
    assert run(sk.deduct(f"{key}:none", "ann")) == DeductResult(Outcome.NO_ITEM)


async def _collect(records: Any) -> list[Any]:
    return [record async for record in records]


# ---- typed errors ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fresh() -> Iterator[servers.Server]:
    """A server of this file's own: some contract cases change its settings or role for a moment."""
    with servers.standalone() as started:
        yield started


@pytest.fixture(scope="module")
def raw_client(kind: ClientKind, fresh: servers.Server) -> Iterator[Any]:
    """A client of the kind, never wrapped: its errors are the library's own, untyped."""
    client = kind.standalone(fresh.port)
    yield client
    kind.close(client)


def provoke_through(kind: ClientKind, fresh: servers.Server, client: Any, case: dict[str, Any], key: str) -> Any:
    """A contract case's trigger sent through the kind's client (the error it raised, returned);
    setup and cleanup through a plain one."""

    def send(trigger: list[str], user: dict[str, Any] | None) -> Any:
        if user is None:
            return kind.raw(client, trigger)
        as_user = kind.standalone(fresh.port, user=(command([user["user"]], key)[0], user["password"]))
        try:
            return kind.raw(as_user, trigger)
        finally:
            kind.close(as_user)

    return provoke_with(fresh, case, key, send, Exception)


@pytest.mark.parametrize("error", PROVOCABLE, ids=lambda error: error["name"])
def test_every_provocable_error_is_typed_alike_through_each_client(
    kind: ClientKind, fresh: servers.Server, raw_client: Any, error: dict[str, Any]
) -> None:
    raised = provoke_through(kind, fresh, raw_client, error["provoke"], f"parity-{kind.name}-{error['name']}")
    assert isinstance(raised, BaseException), f"{error['name']} replied {raised!r}"
    typed = typed_error(raised)
    assert isinstance(typed, SeckillError), f"{raised!r} left untyped"
    assert (typed.kind.value, typed.code, typed.retryable) == (error["kind"], error["code"], error["retryable"])
    assert f"{typed.code} {typed.message}" in [error["text"], *error.get("other_texts", [])]


def test_a_method_raises_the_typed_error_as_the_kinds_own_error_too(
    kind: ClientKind, clients: Clients, server: servers.Server, key: str
) -> None:
    run = kind.run
    client = clients.keep(kind.standalone(server.port))
    sk = kind.seckill(client)
    run(sk.init(key, 5))
    run(sk.deduct(key, "ann", 1, request_id="r1"))
    with pytest.raises(RequestIdConflictError) as conflict:
        run(sk.deduct(key, "bob", 1, request_id="r1"))
    assert isinstance(conflict.value, kind.reply_error)  # existing handlers of the client still catch it
    assert (conflict.value.code, conflict.value.message) == (
        "ERR",
        "request id was already used by another user or for another quantity",
    )
    kind.raw(client, ["SET", f"{key}:text", "x"])
    with pytest.raises(WrongTypeError) as wrong:
        run(sk.get(f"{key}:text"))
    assert (wrong.value.code, wrong.value.message) == (
        "WRONGTYPE",
        "Operation against a key holding the wrong kind of value",
    )


SAID = "An error was signalled by the server:"
GLIDE_WORDING = [
    (f"{SAID} - ResponseError: request id was already used by another user", "ERR", ErrorKind.REQUEST_ID_CONFLICT),
    (f"{SAID} - PermissionDenied: this user has no permissions to access a key", "NOPERM", ErrorKind.NO_PERMISSION),
    (f"{SAID} - CrossSlot: the item's order stream does not hash to its slot", "CROSSSLOT", ErrorKind.ORDER_STREAM),
    (f"{SAID} - TryAgain: the item's order stream is missing", "TRYAGAIN", ErrorKind.ORDER_STREAM),
    (f"{SAID} - ReadOnly: You can't write against a read only replica.", "READONLY", ErrorKind.UNAVAILABLE),
    (f"{SAID} - MasterDown: Link with MASTER is down", "MASTERDOWN", ErrorKind.UNAVAILABLE),
    (f"{SAID} - BusyLoadingError: Redis is loading the dataset in memory", "LOADING", ErrorKind.UNAVAILABLE),
    ("WRONGTYPE: Operation against a key holding the wrong kind of value", "WRONGTYPE", ErrorKind.WRONG_TYPE),
    ("NOREPLICAS: Not enough good replicas to write.", "NOREPLICAS", ErrorKind.UNAVAILABLE),
]


@pytest.mark.parametrize(("text", "code", "error_kind"), GLIDE_WORDING, ids=[case[1] for case in GLIDE_WORDING])
def test_glides_wording_is_read_back_to_the_servers_code_and_message(
    text: str, code: str, error_kind: ErrorKind
) -> None:
    typed = typed_error(glide_exceptions.RequestError(text))
    assert isinstance(typed, SeckillError)
    assert (typed.code, typed.message, typed.kind) == (code, text.rpartition(": ")[2], error_kind)


def test_glides_own_errors_stay_glides_and_a_lost_connection_is_unavailable() -> None:
    for error in (
        glide_exceptions.RequestError(f"{SAID} - Moved: 3999 127.0.0.1:6381"),
        glide_exceptions.RequestError("OOM: command not allowed when used memory > 'maxmemory'."),
        glide_exceptions.TimeoutError("Request timed out"),
        glide_exceptions.ClosingError("the client is closed"),
    ):
        assert typed_error(error) is None, error
    lost = typed_error(glide_exceptions.ConnectionError("Received error - Connection refused"))
    assert isinstance(lost, ConnectionLostError) and isinstance(lost, glide_exceptions.ConnectionError)
    assert (lost.code, lost.retryable) == ("", True)


# ---- pipelines and batches -----------------------------------------------------------------


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "transaction"])
def test_pipelines_and_batches_are_typed(
    kind: ClientKind, clients: Clients, server: servers.Server, key: str, transaction: bool
) -> None:
    client = clients.keep(kind.standalone(server.port))
    kind.run(kind.seckill(client).init(key, 3, limit=1))
    queue = kind.pipeline(client, transaction)
    sk = kind.seckill(queue)
    assert sk.deduct(key, "ann", 1, request_id="r1") is queue  # queued: the pipeline comes back
    sk.deduct(key, "bob", 1, request_id="r1")
    queue.get(f"{key}:plain")  # a command of the client's own in between
    sk.info(key)
    sk.deduct(key, "cy", 0)
    results = kind.execute(sk, client, raise_on_error=False)
    assert results[0] == DeductResult(Outcome.BOUGHT, 2)
    assert isinstance(results[1], RequestIdConflictError) and isinstance(results[1], kind.reply_error)
    assert results[2] is None
    assert results[3].sold == 1 and results[3].buyers == 1
    assert isinstance(results[4], InvalidArgumentError)
    assert results[4].message == "value is out of range, must be positive"

    queue = kind.pipeline(client, transaction)
    sk = kind.seckill(queue)
    sk.deduct(key, "dan", 1, request_id="r2")
    sk.deduct(key, "dan", 1, request_id="r1")
    with pytest.raises(RequestIdConflictError) as raised:
        kind.execute(sk, client)
    assert "(command #2 of the pipeline)" in raised.value.__notes__
    with pytest.raises(TypeError, match="wait_replicas needs a client"):
        sk.confirm(key, "r1", wait_replicas=1)
    with pytest.raises(TypeError, match="scan_iter needs a client"):
        first_record(kind, sk.scan_iter(key))


def first_record(kind: ClientKind, records: Any) -> Any:
    return kind.run(records.__anext__()) if kind.is_async else next(records)


# ---- a cluster ----------------------------------------------------------------------------


def spread_keys(key: str) -> list[str]:
    return [f"{key.strip('{}')}:{i}" for i in range(100)]  # no hash tag: spread over every master


def one_call(kind: ClientKind, sk: Any, i: int, key: str) -> None:
    """Call ``i`` of 1,000 on 100 keys: every method that takes one item, and orders."""
    run = kind.run
    match i // 100:
        case 0:
            assert run(sk.init(key, 1000, limit=50)) is True
        case 1 | 2:
            assert run(sk.deduct(key, f"user-{i % 7}", 1, request_id=f"order-{i}")).outcome is Outcome.BOUGHT
        case 3:
            assert run(sk.order([(key, 1)], "orderer", f"bundle-{i}", hold_until=FAR_FUTURE_MS)).taken
        case 4:
            assert run(sk.confirm_order([key], f"bundle-{i - 100}")).confirmed
        case 5:
            assert run(sk.refund(key, f"order-{i - 400}")).units == 1
        case 6:
            assert run(sk.refund_order([key], f"bundle-{i - 300}"))[0].units == 1
        case 7:
            assert (run(sk.get(key)), run(sk.bought(key, "orderer"))) == (999, 0)
        case 8:
            assert run(sk.info(key)).sold == 3 and run(sk.holds(key)) == []
        case _:
            assert run(sk.add(key, 1)) == 1000
            assert run(sk.status(key, f"order-{i - 700}")).status is RequestStatus.PURCHASED


def test_a_cluster_routes_every_call_to_its_items_master(
    kind: ClientKind, clients: Clients, cluster_nodes: list[servers.Server], key: str
) -> None:
    client = clients.keep(kind.cluster(cluster_nodes[0].port))
    sk = kind.seckill(client)
    keys = spread_keys(key)
    kind.run(sk.get(keys[0]))  # the client learns the slots
    before = servers.moved_errors(cluster_nodes)
    for i in range(1000):
        one_call(kind, sk, i, keys[i % 100])
    assert servers.moved_errors(cluster_nodes) == before
    # The counter counts: a call sent to a master that does not own the key adds one.
    with cluster_nodes[0].client() as plain:
        foreign = next(k for k in keys if _owner(cluster_nodes, k) is not cluster_nodes[0])
        with pytest.raises(redis.exceptions.ResponseError):
            plain.execute_command("SECKILL.GET", foreign)
    assert servers.moved_errors(cluster_nodes) == before + 1

    batch = kind.pipeline(client, False)
    queued = kind.seckill(batch)
    for index, k in enumerate(keys[:6]):
        queued.deduct(k, "late", 1, request_id=f"order-{200 + index}")  # a used id, another user
        queued.get(k)
    results = kind.execute(queued, client, raise_on_error=False)
    assert [type(result) for result in results[0::2]] == [RequestIdConflictError] * 6
    assert results[1::2] == [1000] * 6


def _owner(nodes: list[servers.Server], key: str) -> servers.Server:
    """The master of the key's slot (servers.cluster gives node i the i-th range of slots)."""
    with nodes[0].client() as plain:
        slot = int(plain.execute_command("CLUSTER", "KEYSLOT", key))
    return next(node for i, node in enumerate(nodes) if slot <= (i + 1) * 16384 // len(nodes) - 1)


# ---- durable writes --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def master_and_replica() -> Iterator[tuple[servers.Server, servers.Server]]:
    with servers.replicated() as pair:
        yield pair


def test_a_wait_is_answered_by_the_items_master(
    kind: ClientKind, clients: Clients, master_and_replica: tuple[servers.Server, servers.Server], key: str
) -> None:
    master, replica = master_and_replica
    run = kind.run
    sk = kind.seckill(clients.keep(kind.standalone(master.port)))
    run(sk.init(key, 5))
    held = run(sk.deduct(key, "ann", 1, request_id="r1", hold_until=FAR_FUTURE_MS, wait_replicas=1))
    assert held == Durable(DeductResult(Outcome.BOUGHT, 4, FAR_FUTURE_MS), 1, True)
    assert run(sk.confirm(key, "r1", wait_replicas=1)) == Durable(ConfirmOutcome.CONFIRMED, 1, True)
    with replica.client() as on_replica:
        assert seckill.Seckill(on_replica).status(key, "r1").status is RequestStatus.CONFIRMED
    # Two replicas asked for, one there: WAIT times out with the one it had.
    refunded = run(sk.refund(key, "r1", wait_replicas=2, wait_timeout_ms=50))
    assert refunded == Durable(RefundResult(RefundOutcome.REFUNDED, 1), 1, False)
    with pytest.raises(RequestIdConflictError):  # the write's error, not WAIT's answer
        run(sk.deduct(key, "bob", 1, request_id="r1", wait_replicas=1))


def test_a_wait_on_a_cluster_goes_to_the_items_master_or_is_refused(
    kind: ClientKind, clients: Clients, cluster_nodes: list[servers.Server], key: str
) -> None:
    sk = kind.seckill(clients.keep(kind.cluster(cluster_nodes[1].port)))
    kind.run(sk.init(key, 5))
    if kind.name.startswith(("redis-py", "valkey-py")):
        with pytest.raises(TypeError, match="wait_replicas needs a standalone client"):
            sk.confirm(key, "r1", wait_replicas=0)
        return
    waits = [_calls(node, "wait") for node in cluster_nodes]
    moved = servers.moved_errors(cluster_nodes)
    assert kind.run(sk.deduct(key, "ann", 1, request_id="r1", wait_replicas=0)) == Durable(
        DeductResult(Outcome.BOUGHT, 4), 0, True
    )
    owner = _owner(cluster_nodes, key)
    assert [_calls(node, "wait") - before for node, before in zip(cluster_nodes, waits, strict=True)] == [
        1 if node is owner else 0 for node in cluster_nodes
    ]
    assert servers.moved_errors(cluster_nodes) == moved


def _calls(node: servers.Server, command_name: str) -> int:
    with node.client() as plain:
        stats = plain.info("commandstats")
    return int(stats.get(f"cmdstat_{command_name}", {}).get("calls", 0))


# ---- one client library installed ------------------------------------------------------------

# Each run hides the other client libraries, as if they were not installed.
HIDDEN = {
    "redis": ("valkey", "glide", "glide_sync", "glide_shared"),
    "valkey": ("redis", "glide", "glide_sync", "glide_shared"),
    "glide": ("redis", "valkey"),
}

ONLY_ONE = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}")

sys.meta_path.insert(0, NotInstalled())
import seckill, seckill.asyncio, seckill.cart, seckill.split
from seckill import RequestIdConflictError, SeckillError
from seckill.errors import typed_error

{check}
print("imported")
"""

CHECKS = {
    "redis": """
import redis
error = typed_error(redis.exceptions.ResponseError("request id was already used by another user"))
assert isinstance(error, RequestIdConflictError) and isinstance(error, redis.exceptions.ResponseError)
seckill.Seckill(redis.Redis(port=1))
""",
    "valkey": """
import valkey
error = typed_error(valkey.exceptions.ResponseError("request id was already used by another user"))
assert isinstance(error, RequestIdConflictError) and isinstance(error, valkey.exceptions.ResponseError)
seckill.Seckill(valkey.Valkey(port=1)).client.pipeline()
seckill.asyncio.Seckill(valkey.asyncio.Valkey(port=1))
""",
    "glide": """
from glide_shared.exceptions import RequestError
server = "An error was signalled by the server"
error = typed_error(RequestError(f"{server}: - ResponseError: request id was already used by another user"))
assert isinstance(error, RequestIdConflictError) and isinstance(error, RequestError)
assert (error.code, error.message) == ("ERR", "request id was already used by another user")
import glide, glide_sync
seckill.Seckill(glide_sync.Batch(is_atomic=False)).get("k")
seckill.asyncio.Seckill(glide.ClusterBatch(is_atomic=True)).get("k")
""",
}


@pytest.mark.parametrize("library", sorted(HIDDEN))
def test_the_library_imports_with_one_client_library_installed(library: str) -> None:
    script = ONLY_ONE.format(hidden=set(HIDDEN[library]), check=textwrap.dedent(CHECKS[library]))
    package = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(package)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported"
