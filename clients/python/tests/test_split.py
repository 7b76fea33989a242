"""SplitItem: one item split over parts on the 3 masters of a real cluster, sync and asyncio."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import redis
import redis.asyncio

import seckill.asyncio
import seckill.split
from seckill import (
    ConfirmOutcome,
    DeductResult,
    ItemInfo,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    Seckill,
    SettleOutcome,
    SplitItem,
    Transfer,
    fnv1a32,
)
from servers import Server, moved_errors

FAR_FUTURE_MS = 4102444800000


def test_fnv1a32_vectors() -> None:
    assert fnv1a32(b"") == 2166136261
    assert fnv1a32(b"a") == 3826002220 == 0xE40C292C
    assert fnv1a32(b"foobar") == 3214735720 == 0xBF9CF968
    assert fnv1a32("foobar") == fnv1a32(b"foobar")  # str hashes as UTF-8
    assert fnv1a32("zoë") == fnv1a32("zoë".encode())


def test_names_and_shares() -> None:
    assert SplitItem.named("sku:1", 3) == seckill.split.named("sku:1", 3) == [
        "sku:1:part:0",
        "sku:1:part:1",
        "sku:1:part:2",
    ]
    assert seckill.split.named(b"sku:1", 2) == [b"sku:1:part:0", b"sku:1:part:1"]
    assert seckill.split.split_stock(100, 3) == [34, 33, 33]
    assert seckill.split.split_stock(2, 3) == [1, 1, 0]
    assert seckill.split.split_stock(0, 2) == [0, 0]
    with pytest.raises(ValueError):
        seckill.split.split_stock(-1, 3)
    with pytest.raises(TypeError):
        seckill.split.split_stock("UNLIMITED", 3)  # type: ignore[arg-type]


def test_a_drop_shared_size_by_size() -> None:
    assert seckill.split.split_variants({"42": 100, "43": 2, "44": "UNLIMITED"}, 3) == [
        {"42": 34, "43": 1, "44": "UNLIMITED"},
        {"42": 33, "43": 1, "44": "UNLIMITED"},
        {"42": 33, "43": 0, "44": "UNLIMITED"},
    ]
    with pytest.raises(TypeError):
        seckill.split.split_variants([("42", 1)], 2)  # type: ignore[arg-type]
    assert seckill.split.sum_variants([{"42": 1, "43": 2}, None, {"43": 3}]) == {"42": 1, "43": 5}
    assert seckill.split.sum_variants([{"44": seckill.UNLIMITED_STOCK}, {"44": 2}]) == {"44": seckill.UNLIMITED_STOCK}
    assert seckill.split.sum_variants([None, None]) is None


def test_split_drop_on_the_cluster(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    parts = parts_on_each_master(rc, cluster_nodes, key.strip("{}") + ":drop")
    item = SplitItem(rc, parts)
    assert item.variants() is None
    assert item.init({"42": 10, "43": 4}, limit=1) == [True, True, True]
    assert [item.seckill.variants(part) for part in parts] == [
        {"42": 4, "43": 2},
        {"42": 3, "43": 1},
        {"42": 3, "43": 1},
    ]
    assert item.variants() == {"42": 10, "43": 4}
    buyer = "user-1"
    assert item.deduct(buyer, 1, request_id="o1", variant="43").ok
    assert item.deduct(buyer, 1, request_id="o2", variant="42").outcome is Outcome.LIMIT_REACHED
    assert item.variants() == {"42": 10, "43": 3}
    assert item.seckill.variants(item.key_for(buyer))["43"] == (1 if item.part_for(buyer) else 2) - 1

    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[0].port)
        try:
            twin = seckill.asyncio.SplitItem(client, parts)
            assert await twin.variants() == {"42": 10, "43": 3}
            result = await twin.deduct("user-2", 1, request_id="o3", variant="42", hold=600)
            assert result.ok and result.deadline is not None
            assert await twin.variants() == {"42": 9, "43": 3}
        finally:
            await client.aclose()

    asyncio.run(main())


def parts_on_each_master(rc: redis.RedisCluster, nodes: list[Server], base: str) -> list[str]:
    """Part names, one owned by each master, in the masters' order, found by their slot's owner."""
    by_port: dict[int, str] = {}
    for i in itertools.count():
        name = f"{base}:part:{i}"
        by_port.setdefault(rc.get_node_from_key(name).port, name)
        if len(by_port) == len(nodes):
            return [by_port[node.port] for node in nodes]
    raise AssertionError("unreachable")


def assert_one_part_per_master(nodes: list[Server], base: str, parts: list[str]) -> None:
    """KEYS is local to a node: each master really holds its own part, and only that one."""
    for node, part in zip(nodes, parts):
        with node.client() as plain:
            assert plain.keys(f"{base}:part:*") == [part]


def test_split_item_on_the_cluster(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    base = key.strip("{}")
    parts = parts_on_each_master(rc, cluster_nodes, base)
    item = SplitItem(rc, parts)
    assert item.parts == tuple(parts)
    assert item.stock() is None and item.info() == [None, None, None]

    item.seckill.get(parts[0])  # warm-up: the client learns the slots
    before = moved_errors(cluster_nodes)
    assert item.init(100, limit=1, ex=3600) == [True, True, True]
    assert item.init(100, limit=1) == [False, False, False]
    assert_one_part_per_master(cluster_nodes, base, parts)
    assert [info.initial for info in item.info()] == [34, 33, 33]
    assert item.stock() == 100

    users = [f"user-{i}" for i in range(200)]
    results = {user: item.deduct(user, 1, request_id=f"order-{user}") for user in users}
    for user, result in results.items():
        assert result.outcome in (Outcome.BOUGHT, Outcome.SOLD_OUT)
        part = item.part_for(user)
        assert part == fnv1a32(user) % 3
        assert item.key_for(user) == parts[part]
        expected = 1 if result.ok else 0
        assert item.bought(user) == expected
        for other, name in enumerate(parts):  # on its own part only
            assert item.seckill.bought(name, user) == (expected if other == part else 0)
    sold = sum(1 for result in results.values() if result.ok)
    assert item.stock() == 100 - sold

    # Each part sold to its own users until its share ran out.
    infos = item.info()
    for part, (info, share) in enumerate(zip(infos, (34, 33, 33))):
        mine = sum(1 for user in users if item.part_for(user) == part)
        assert info is not None and info.sold == min(mine, share) and info.buyers == info.sold
    assert sum(info.sold for info in infos) == sold

    # The per-user limit stays exact: a user always reaches the same part. Free one unit on the
    # buyer's part first (a sold-out part answers SOLD_OUT, checked before the limit).
    buyer, other = [user for user, result in results.items() if result.ok and item.part_for(user) == 0][:2]
    assert item.refund(other, f"order-{other}") == RefundResult(RefundOutcome.REFUNDED, 1)
    assert item.refund(other, f"order-{other}") == RefundResult(RefundOutcome.ALREADY_REFUNDED)
    assert item.confirm(other, f"order-{other}") is ConfirmOutcome.REFUNDED
    assert item.bought(other) == 0
    assert item.stock() == 100 - sold + 1
    assert item.deduct(buyer, 1, request_id="again").outcome is Outcome.LIMIT_REACHED
    # A replay gets its first reply, from the same part.
    assert item.deduct(buyer, 1, request_id=f"order-{buyer}") == results[buyer]
    assert moved_errors(cluster_nodes) == before


def test_split_item_holds_and_moves(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    base = key.strip("{}")
    parts = parts_on_each_master(rc, cluster_nodes, base)
    item = SplitItem(Seckill(rc), parts)  # a Seckill works as well as a redis-py client
    assert item.init(10) == [True, True, True]  # 4, 3, 3
    user = "frank"
    mine = item.key_for(user)
    result = item.deduct(user, 2, request_id="hold-1", hold_until=FAR_FUTURE_MS)
    assert result == DeductResult(Outcome.BOUGHT, (4 if mine == parts[0] else 3) - 2, FAR_FUTURE_MS)
    assert item.confirm(user, "hold-1") is ConfirmOutcome.CONFIRMED
    assert item.confirm(user, "hold-1") is ConfirmOutcome.ALREADY_FINAL
    assert item.stock() == 8

    # Move 2 units from one master's part to another's, as seckill-rebalancer does.
    sk = item.seckill
    source, destination = parts[0], parts[2]
    taken = sk.take(source, 2, "move-1", to=destination)
    assert taken == 2
    assert sk.transfers(source) == [Transfer("move-1", 2, destination)]
    assert item.stock() == 6  # in flight: out of the source, not yet in the destination
    assert sk.add(destination, taken, "move-1") == sk.get(destination)
    assert sk.add(destination, taken, "move-1") == sk.get(destination)  # a replay
    assert sk.settle(source, "move-1") is SettleOutcome.SETTLED
    assert sk.transfers(source) == []
    assert item.stock() == 8
    infos = item.info()
    assert (infos[0].moved_out, infos[0].moved_in, infos[2].moved_out, infos[2].moved_in) == (2, 0, 0, 2)

    # A missing part counts 0 in stock() and is None in info().
    rc.delete(parts[1])
    assert item.stock() == sk.get(parts[0]) + sk.get(parts[2]) == 8 - 3
    assert item.info()[1] is None and isinstance(item.info()[0], ItemInfo)
    for part in parts:
        rc.delete(part)
    assert item.stock() is None


def test_split_item_arguments(rc: redis.RedisCluster) -> None:
    with pytest.raises(ValueError):
        SplitItem(rc, [])
    with pytest.raises(ValueError):
        SplitItem(rc, ["a", "a"])
    with pytest.raises(TypeError):
        SplitItem(rc, "sku:1")  # one key, not a list
    with pytest.raises(TypeError):
        SplitItem(rc.pipeline(), ["a", "b"])
    with pytest.raises(TypeError):
        SplitItem(redis.asyncio.Redis(), ["a", "b"])
    item = SplitItem(rc, ["a", "b", "c"])
    with pytest.raises(ValueError):
        item.init(-1)
    with pytest.raises(TypeError):
        item.part_for(42)  # type: ignore[arg-type]


def test_async_split_item_on_the_cluster(
    cluster_nodes: list[Server], rc: redis.RedisCluster, key: str, protocol: int
) -> None:
    base = key.strip("{}")
    parts = parts_on_each_master(rc, cluster_nodes, base)

    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[1].port, protocol=protocol)
        try:
            item = seckill.asyncio.SplitItem(client, parts)
            assert seckill.asyncio.SplitItem.named("x", 2) == ["x:part:0", "x:part:1"]
            assert await item.stock() is None
            assert await item.init(100, limit=1) == [True, True, True]
            assert_one_part_per_master(cluster_nodes, base, parts)
            users = [f"user-{i}" for i in range(200)]
            results = await asyncio.gather(*(item.deduct(user, request_id=f"o-{user}") for user in users))
            sold = sum(1 for result in results if result.ok)
            assert await item.stock() == 100 - sold
            for user, result in zip(users, results):
                part = item.part_for(user)
                assert part == fnv1a32(user) % 3
                expected = 1 if result.ok else 0
                assert await item.bought(user) == expected
                assert await item.seckill.bought(parts[part], user) == expected
                assert await item.seckill.bought(parts[(part + 1) % 3], user) == 0
            infos = await item.info()
            assert [info.initial for info in infos] == [34, 33, 33]
            assert sum(info.sold for info in infos) == sold
            buyers = [user for user, result in zip(users, results) if result.ok and item.part_for(user) == 2]
            assert await item.refund(buyers[1], f"o-{buyers[1]}") == RefundResult(RefundOutcome.REFUNDED, 1)
            assert await item.confirm(buyers[1], f"o-{buyers[1]}") is ConfirmOutcome.REFUNDED
            assert await item.confirm(buyers[1], "never") is ConfirmOutcome.UNKNOWN_REQUEST
            assert await item.stock() == 100 - sold + 1
            assert (await item.deduct(buyers[0], request_id="again")).outcome is Outcome.LIMIT_REACHED
            # The unit given back, held: the deadline comes back from the user's part.
            held = await item.deduct(buyers[1], request_id="hold", hold=600)
            assert held.deadline is not None
            assert held.deadline == (await item.seckill.status(item.key_for(buyers[1]), "hold")).deadline
        finally:
            await client.aclose()

    asyncio.run(main())


def test_cluster_pipelines_type_transfers(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    """redis-py's cluster pipelines hand error replies to the callbacks: typed there too."""
    base = key.strip("{}")
    source, _, destination = parts_on_each_master(rc, cluster_nodes, base)
    Seckill(rc).init(source, 5)
    Seckill(rc).init(destination, 0)
    sk = Seckill(rc.pipeline())
    sk.take(source, 2, "m1", to=destination)
    sk.take(source, 3, "m1", to=destination)
    sk.add(destination, 2, "m1")
    sk.transfers(source)
    sk.settle(source, "m1")
    results = sk.execute(raise_on_error=False)
    assert results[0] == 2
    assert isinstance(results[1], RequestIdConflictError)
    assert results[2:] == [2, [Transfer("m1", 2, destination)], SettleOutcome.SETTLED]

    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[2].port)
        try:
            async with client.pipeline() as pipe:
                p = seckill.asyncio.Seckill(pipe)
                p.take(source, 1, "m2")
                p.add(source, 1, "m2")  # the other direction
                p.settle(source, "m2")
                p.transfers(source)
                p.info(destination)
                results = await p.execute(raise_on_error=False)
            assert results[0] == 1 and isinstance(results[1], RequestIdConflictError)
            assert results[2:4] == [SettleOutcome.SETTLED, []]
            assert isinstance(results[4], ItemInfo) and results[4].moved_in == 2
        finally:
            await client.aclose()

    asyncio.run(main())
