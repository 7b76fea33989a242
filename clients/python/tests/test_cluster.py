"""A real 3-master cluster: redis-py routes SECKILL.* by its item key, with no MOVED at all."""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio
from redis.exceptions import RedisClusterException

import seckill.asyncio
from seckill import (
    ConfirmOutcome,
    ErrorKind,
    OrderStreamError,
    DeductResult,
    Hold,
    InvalidArgumentError,
    ItemInfo,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    Seckill,
)
from servers import Server, moved_errors

FAR_FUTURE_MS = 4102444800000


def spread_keys(prefix: str) -> list[str]:
    return [f"{prefix}:{i}" for i in range(100)]  # no hash tag: spread over every master


def nodes_holding(nodes: list[Server], keys: list[str]) -> int:
    counts = []
    for node in nodes:
        with node.client() as client:
            counts.append(sum(1 for k in keys if client.execute_command("CLUSTER", "KEYSLOT", k) in owned_slots(client)))
    return sum(1 for c in counts if c)


def owned_slots(client: redis.Redis) -> set[int]:
    my_id = client.execute_command("CLUSTER", "MYID")
    owned: set[int] = set()
    for line in client.execute_command("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if fields[0] == my_id:
            for part in fields[8:]:
                first, _, last = part.partition("-")
                owned.update(range(int(first), int(last or first) + 1))
    return owned


def one_call(sk: Seckill, i: int, key: str) -> object:
    match i // 100:
        case 0:
            return sk.init(key, 1000, limit=50)
        case 1 | 2 | 3:
            return sk.deduct(key, f"user-{i % 7}", 1, request_id=f"order-{i}")
        case 4:
            return sk.deduct(key, "holder", 1, request_id=f"hold-{i}", hold_until=FAR_FUTURE_MS)
        case 5:
            return sk.confirm(key, f"hold-{i - 100}")
        case 6:
            return sk.refund(key, f"order-{i - 500}")
        case 7:
            return (sk.get(key), sk.bought(key, "user-0"))
        case 8:
            return (sk.info(key), sk.holds(key))
        case _:
            return (sk.add(key, 1), sk.window(key, 0, 0), sk.release(key, "none"))


def check_final(info: ItemInfo | None) -> None:
    assert info is not None
    # init 1000, 3 purchases and 1 hold (confirmed), 1 refund of one purchase, 1 unit added
    assert (info.sold, info.refunded, info.held, info.added, info.stock) == (4, 1, 0, 1, 998)


def test_routing_without_moved(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    sk = Seckill(rc)
    keys = spread_keys(key.strip("{}"))
    assert nodes_holding(cluster_nodes, keys) == 3
    sk.get(keys[0])  # warm-up: the client learns the slots
    before = moved_errors(cluster_nodes)
    for i in range(1000):
        one_call(sk, i, keys[i % 100])
    assert moved_errors(cluster_nodes) == before
    # The counter does count: a call sent to a master that does not own the key adds one.
    for node in cluster_nodes:
        with node.client() as plain:
            if rc.keyslot(keys[0]) not in owned_slots(plain):
                with pytest.raises(redis.exceptions.ResponseError) as raised:
                    plain.execute_command("SECKILL.GET", keys[0])
                moved = isinstance(raised.value, redis.exceptions.MovedError)
                assert moved or str(raised.value).startswith("MOVED")  # redis-py 8 / 5
                break
    assert moved_errors(cluster_nodes) == before + 1
    for k in keys:
        check_final(sk.info(k))
    assert sk.holds(keys[0]) == []
    assert sk.confirm(keys[1], "hold-401") is ConfirmOutcome.ALREADY_FINAL


def test_async_routing_without_moved(cluster_nodes: list[Server], key: str, protocol: int) -> None:
    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[1].port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            keys = spread_keys(key.strip("{}"))
            await sk.get(keys[0])
            before = moved_errors(cluster_nodes)
            for i in range(1000):
                k = keys[i % 100]
                if i < 100:
                    assert await sk.init(k, 10) is True
                elif i < 900:
                    await sk.deduct(k, f"u{i}", 1, request_id=f"r{i}")
                else:
                    info = await sk.info(k)
                    assert info is not None and info.sold == 8 and info.stock == 2
            assert moved_errors(cluster_nodes) == before
            with pytest.raises(RequestIdConflictError):
                await sk.deduct(keys[5], "someone-else", 1, request_id="r105")
        finally:
            await client.aclose()

    asyncio.run(main())


def test_cluster_pipeline(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    keys = spread_keys(key.strip("{}"))[:6]
    pipe = rc.pipeline()
    sk = Seckill(pipe)
    for k in keys:
        sk.init(k, 2)
        sk.deduct(k, "alice", 1, request_id="r1")
        sk.deduct(k, "bob", 1, request_id="r1")
        sk.info(k)
    results = sk.execute(raise_on_error=False)
    for i in range(len(keys)):
        init, bought, conflict, info = results[4 * i : 4 * i + 4]
        assert (init, bought) == (True, DeductResult(Outcome.BOUGHT, 1))
        assert isinstance(conflict, RequestIdConflictError)
        assert isinstance(info, ItemInfo) and info.buyers == 1
    for k in keys:
        sk.deduct(k, "carol", 1, request_id="h1", hold_until=FAR_FUTURE_MS)
        sk.refund(k, "r1")
        sk.refund(k, "r1")
        sk.confirm(k, "r1")
        sk.confirm(k, "never")
    results = sk.execute()
    for i in range(len(keys)):
        assert results[5 * i : 5 * i + 5] == [
            DeductResult(Outcome.BOUGHT, 0, FAR_FUTURE_MS),
            RefundResult(RefundOutcome.REFUNDED, 1),
            RefundResult(RefundOutcome.ALREADY_REFUNDED),
            ConfirmOutcome.REFUNDED,
            ConfirmOutcome.UNKNOWN_REQUEST,
        ]
    sk.deduct(keys[0], "carol", 0)
    with pytest.raises(InvalidArgumentError):
        sk.execute()


def test_cluster_transaction(rc: redis.RedisCluster, key: str) -> None:
    try:
        pipe = rc.pipeline(transaction=True)
    except RedisClusterException:
        pytest.skip(f"redis-py {redis.__version__} has no cluster transactions")
    sk = Seckill(pipe)
    sk.init(key, 2)
    sk.deduct(key, "alice", 1, request_id="r1", hold_until=FAR_FUTURE_MS)
    sk.deduct(key, "bob", 1, request_id="r1")
    sk.holds(key)
    pipe.xlen(f"{key}:orders")
    results = sk.execute(raise_on_error=False)
    assert results[:2] == [True, DeductResult(Outcome.BOUGHT, 1, FAR_FUTURE_MS)]
    assert isinstance(results[2], RequestIdConflictError)
    assert results[3:] == [[Hold("r1", "alice", 1, FAR_FUTURE_MS)], 0]


def test_async_cluster_pipeline(cluster_nodes: list[Server], key: str, protocol: int) -> None:
    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[2].port, protocol=protocol)
        try:
            keys = spread_keys(key.strip("{}"))[:6]
            async with client.pipeline() as pipe:
                sk = seckill.asyncio.Seckill(pipe)
                for k in keys:
                    sk.init(k, 2)
                    sk.deduct(k, "alice", 3)
                    sk.deduct(k, "alice", 0)
                    sk.get(k)
                results = await sk.execute(raise_on_error=False)
            for i in range(len(keys)):
                init, sold_out, invalid, stock = results[4 * i : 4 * i + 4]
                assert (init, sold_out, stock) == (True, DeductResult(Outcome.SOLD_OUT), 2)
                assert isinstance(invalid, InvalidArgumentError)
        finally:
            await client.aclose()

    asyncio.run(main())


def test_order_stream_missing_while_slot_migrates(
    cluster_nodes: list[Server], rc: redis.RedisCluster, key: str
) -> None:
    """TRYAGAIN from the module: an OrderStreamError that says it is retryable."""
    sk = Seckill(rc)
    sk.init(key, 10, stream=f"{key}:orders")
    slot = rc.keyslot(key)
    owner_port = rc.get_node_from_key(key).port
    source = next(node for node in cluster_nodes if node.port == owner_port)
    target = next(node for node in cluster_nodes if node.port != owner_port)
    with source.client() as src, target.client() as dst:
        try:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src.execute_command("CLUSTER", "MYID"))
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst.execute_command("CLUSTER", "MYID"))
            with redis.Redis(port=source.port) as node_client:
                with pytest.raises(OrderStreamError) as raised:
                    Seckill(node_client).deduct(key, "alice", 1, request_id="r1")
            error = raised.value
            assert (error.kind, error.code, error.retryable) == (ErrorKind.ORDER_STREAM, "TRYAGAIN", True)
            assert error.message == (
                "the item's order stream is missing while its slot is being migrated; nothing was changed"
            )
            # redis-py's cluster client retries TRYAGAIN by itself, then gives up with ClusterError.
            with pytest.raises((redis.exceptions.ClusterError, OrderStreamError)):
                sk.deduct(key, "alice", 1, request_id="r1")
        finally:
            for client in (src, dst):
                client.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
    assert sk.deduct(key, "alice", 1, request_id="r1") == DeductResult(Outcome.BOUGHT, 9)
