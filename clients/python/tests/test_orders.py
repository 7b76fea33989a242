"""Orders of several items on one shard (SECKILL.MDEDUCT, MCONFIRM, MREFUND): typed results on a
server and on a real 3-master cluster, sync and asyncio, in pipelines and transactions."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from seckill import (
    ConfirmOutcome,
    DeductResult,
    Durable,
    InvalidArgumentError,
    OrderConfirmation,
    OrderResult,
    OrderState,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestIdConflictError,
    RequestStatus,
    Seckill,
)
from servers import Server, moved_errors

FAR_FUTURE_MS = 4102444800000

BOUGHT = Outcome.BOUGHT
CONFIRMED, FINAL = ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL


def bought(stock: int) -> DeductResult:
    return DeductResult(Outcome.BOUGHT, stock)


def refunded(units: int) -> RefundResult:
    return RefundResult(RefundOutcome.REFUNDED, units)


def bundle(tag: str) -> tuple[str, str, str]:
    """A phone, its case and a charger: three items under one hash tag, so one slot."""
    return f"{tag}:phone", f"{tag}:case", f"{tag}:charger"


def check_a_bundle(sk: Seckill, tag: str) -> None:
    """The whole life of an order of a bundle, on whatever ``sk`` reaches: taken whole or not at
    all, replayed, held with a deadline, confirmed whole or not at all, refunded."""
    phone, case, charger = bundle(tag)
    sk.init(phone, 3)
    sk.init(case, 3, limit=1)
    sk.init(charger, 1)

    # Taken whole: each line's stock left.
    taken = sk.order([(phone, 1), (case, 1)], "lena", "order-1")
    assert taken == OrderResult(True, (bought(2), bought(2)))
    assert taken.refused == {}
    # A retry replays the first reply and takes nothing more.
    assert sk.order([(phone, 1), (case, 1)], "lena", "order-1") == taken
    assert (sk.get(phone), sk.get(case)) == (2, 2)

    # Refused by two lines: their codes, nil (None) on the line that would have been taken.
    refused = sk.order({phone: 1, case: 1, charger: 2}, "lena", "order-2")
    assert refused == OrderResult(False, (None, DeductResult(Outcome.LIMIT_REACHED), DeductResult(Outcome.SOLD_OUT)))
    assert refused.refused == {1: Outcome.LIMIT_REACHED, 2: Outcome.SOLD_OUT}
    assert (sk.get(phone), sk.get(case), sk.get(charger)) == (2, 2, 1)  # nothing taken
    assert sk.status(phone, "order-2") == OrderState(RequestStatus.UNKNOWN, None, 0, 0)
    missing = sk.order([(phone, 1), (f"{tag}:gone", 1)], "lena", "order-3")
    assert missing.lines == (None, DeductResult(Outcome.NO_ITEM)) and not missing.taken

    # Held: WITHDEADLINE is sent, one deadline for every line; each line is a hold on its item.
    held = sk.order([(phone, 1), (charger, 1)], "mo", "order-4", hold_until=FAR_FUTURE_MS)
    assert held == OrderResult(True, (bought(1), bought(0)), FAR_FUTURE_MS)
    assert sk.order([(phone, 1), (charger, 1)], "mo", "order-4", hold_until=FAR_FUTURE_MS) == held
    assert sk.status(charger, "order-4") == OrderState(RequestStatus.HELD, "mo", 1, FAR_FUTURE_MS)
    relative = sk.order([(case, 1)], "noor", "order-5", hold=900)
    assert relative.taken and relative.deadline is not None and relative.deadline < FAR_FUTURE_MS
    assert relative.deadline == sk.status(case, "order-5").deadline
    # A refused held order: no deadline.
    assert sk.order([(phone, 1), (charger, 1)], "pia", "order-6", hold=900) == OrderResult(
        False, (None, DeductResult(Outcome.SOLD_OUT)), None
    )

    # Confirmed whole: 1 per line now, 0 per line final already.
    assert sk.confirm_order([phone, charger], "order-4") == OrderConfirmation(True, (CONFIRMED, CONFIRMED))
    assert sk.confirm_order([phone, charger], "order-4") == OrderConfirmation(True, (FINAL, FINAL))
    # A replay of a confirmed hold: the same stocks, no deadline pending any more.
    assert sk.order([(phone, 1), (charger, 1)], "mo", "order-4", hold_until=FAR_FUTURE_MS) == OrderResult(
        True, (bought(1), bought(0)), None
    )

    # A lapsed line refuses the whole confirmation; nothing is confirmed.
    sk.order([(phone, 1), (case, 1)], "quinn", "order-7", hold_until=FAR_FUTURE_MS)
    assert sk.get(case) == 0
    assert sk.release(case, "order-7") == 1
    lapsed = sk.confirm_order([phone, case], "order-7")
    assert lapsed == OrderConfirmation(False, (None, ConfirmOutcome.LAPSED))
    assert lapsed.refused == {1: ConfirmOutcome.LAPSED}
    assert sk.status(phone, "order-7").status is RequestStatus.HELD  # not confirmed
    unknown = sk.confirm_order([phone, case], "order-404")
    assert unknown.lines == (ConfirmOutcome.UNKNOWN_REQUEST, ConfirmOutcome.UNKNOWN_REQUEST)

    # Refunded: every line that can be, each as REFUND answers it.
    assert sk.refund_order([phone, case], "order-7") == [refunded(1), RefundResult(RefundOutcome.LAPSED)]
    assert sk.refund_order([phone, case, f"{tag}:gone"], "order-7") == [
        RefundResult(RefundOutcome.ALREADY_REFUNDED),
        RefundResult(RefundOutcome.LAPSED),
        RefundResult(RefundOutcome.NO_ITEM),
    ]
    assert sk.refund_order([phone, case], "order-1") == [refunded(1), refunded(1)]
    # A line refunded on its own (the case returned) refuses a confirmation, and a replay says so.
    sk.order([(phone, 1), (case, 1)], "rui", "order-8", hold_until=FAR_FUTURE_MS)
    assert sk.refund(case, "order-8") == refunded(1)
    assert sk.confirm_order([phone, case], "order-8").lines == (None, ConfirmOutcome.REFUNDED)
    replay = sk.order([(phone, 1), (case, 1)], "rui", "order-8", hold_until=FAR_FUTURE_MS)
    assert replay.lines[1] == DeductResult(Outcome.CANCELLED) and not replay.taken
    assert replay.deadline == FAR_FUTURE_MS  # the phone's hold is still pending

    # Every counter adds up: nothing was taken twice or lost.
    for key in (phone, case, charger):
        info = sk.info(key)
        assert info is not None
        assert info.stock + info.sold - info.refunded - info.expired == info.initial + info.added


def check_order_errors(sk: Seckill, tag: str) -> None:
    phone, case, charger = bundle(tag)
    sk.init(phone, 5)
    sk.init(case, 5)
    sk.init(charger, 5)
    sk.order([(phone, 1), (case, 1)], "lena", "order-1")
    with pytest.raises(RequestIdConflictError):  # another quantity
        sk.order([(phone, 2), (case, 1)], "lena", "order-1")
    with pytest.raises(RequestIdConflictError):  # another user
        sk.order([(phone, 1), (case, 1)], "mo", "order-1")
    with pytest.raises(RequestIdConflictError) as other_items:  # an order of other items
        sk.order([(phone, 1), (charger, 1)], "lena", "order-1")
    assert other_items.value.message == "request id was already used for an order of other items"
    with pytest.raises(InvalidArgumentError) as twice:
        sk.order([(phone, 1), (phone, 1)], "lena", "order-2")
    assert twice.value.message == "a key appears on more than one line"
    with pytest.raises(InvalidArgumentError):
        sk.order([(phone, 0)], "lena", "order-2")
    with pytest.raises(InvalidArgumentError):
        sk.order([(phone, 1)], "lena", "order-2", hold=0)
    assert (sk.get(phone), sk.get(case), sk.get(charger)) == (4, 4, 5)  # the errors changed nothing
    # Caught before sending: wrong types, and an order with nothing to route it by.
    with pytest.raises(ValueError):
        sk.order([], "lena", "order-2")
    with pytest.raises(ValueError):
        sk.confirm_order([], "order-2")
    with pytest.raises(TypeError):
        sk.order([(phone, "1")], "lena", "order-2")  # type: ignore[list-item]
    with pytest.raises(TypeError):
        sk.order(phone, "lena", "order-2")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sk.refund_order(phone, "order-1")


def test_orders(r: redis.Redis, key: str) -> None:
    check_a_bundle(Seckill(r), key)


def test_order_errors(r: redis.Redis, key: str) -> None:
    check_order_errors(Seckill(r), key)


def test_raw_replies_are_typed_after_wrapping(r: redis.Redis, key: str) -> None:
    sk = Seckill(r)
    phone, case, _ = bundle(key)
    sk.init(phone, 1)
    sk.init(case, 1)
    # Without WITHDEADLINE the reply is the bare array of lines; no deadline then.
    raw = r.execute_command("SECKILL.MDEDUCT", 2, phone, 1, case, 1, "lena", "o1", "HOLD", 60)
    assert raw == OrderResult(True, (bought(0), bought(0)))
    # Without DETAIL, a lapsed line answers CANCELLED.
    sk.release(case, "o1")
    assert r.execute_command("SECKILL.MCONFIRM", 2, phone, case, "o1") == OrderConfirmation(
        False, (None, ConfirmOutcome.CANCELLED)
    )
    assert r.execute_command("SECKILL.MREFUND", 2, phone, case, "o1") == [refunded(1), RefundResult(RefundOutcome.NOTHING)]


def test_wait_replicas(replicated: tuple[Server, Server], key: str) -> None:
    master, _ = replicated
    with redis.Redis(port=master.port) as client:
        sk = Seckill(client)
        phone, case, _ = bundle(key)
        sk.init(phone, 2)
        sk.init(case, 2)
        placed = sk.order([(phone, 1), (case, 1)], "lena", "o1", hold=60, wait_replicas=1)
        assert placed.durable and placed.replicas == 1 and placed.result.taken
        assert sk.confirm_order([phone, case], "o1", wait_replicas=1) == Durable(
            OrderConfirmation(True, (CONFIRMED, CONFIRMED)), 1, True
        )
        assert sk.refund_order([phone, case], "o1", wait_replicas=1) == Durable([refunded(1), refunded(1)], 1, True)


def queue_an_order(sk: Seckill | seckill.asyncio.Seckill, tag: str) -> None:  # type: ignore[no-untyped-def]
    phone, case, _ = bundle(tag)
    sk.init(phone, 2)
    sk.init(case, 1)
    sk.order([(phone, 1), (case, 1)], "lena", "o1", hold_until=FAR_FUTURE_MS)
    sk.order([(phone, 1), (case, 1)], "mo", "o2")
    sk.order([(phone, 1), (case, 2)], "lena", "o1")  # another quantity: an error
    sk.order([(phone, 1)], "mo", "o3")
    sk.confirm_order([phone, case], "o1")
    sk.refund_order([phone, case], "o1")


def check_queued_order(results: list) -> None:  # type: ignore[type-arg]
    assert results[:4] == [
        True,
        True,
        OrderResult(True, (bought(1), bought(0)), FAR_FUTURE_MS),
        OrderResult(False, (None, DeductResult(Outcome.SOLD_OUT))),
    ]
    assert isinstance(results[4], RequestIdConflictError)
    assert results[5:] == [
        OrderResult(True, (bought(0),)),
        OrderConfirmation(True, (CONFIRMED, CONFIRMED)),
        [refunded(1), refunded(1)],
    ]


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "pipeline"])
def test_pipeline(r: redis.Redis, key: str, transaction: bool) -> None:
    with r.pipeline(transaction=transaction) as pipe:
        sk = Seckill(pipe)
        queue_an_order(sk, key)
        check_queued_order(sk.execute(raise_on_error=False))


def test_asyncio(server: Server, protocol: int, key: str) -> None:
    async def main() -> None:
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            phone, case, _ = bundle(key)
            await sk.init(phone, 1)
            await sk.init(case, 1)
            held = await sk.order([(phone, 1), (case, 1)], "lena", "o1", hold_until=FAR_FUTURE_MS)
            assert held == OrderResult(True, (bought(0), bought(0)), FAR_FUTURE_MS)
            assert (await sk.order({phone: 1}, "mo", "o2")).refused == {0: Outcome.SOLD_OUT}
            assert (await sk.confirm_order([phone, case], "o1")).confirmed
            assert await sk.refund_order([phone, case], "o1") == [refunded(1), refunded(1)]
            with pytest.raises(RequestIdConflictError):
                await sk.order([(phone, 1), (case, 1)], "mo", "o1")
            async with client.pipeline(transaction=True) as pipe:
                queued = seckill.asyncio.Seckill(pipe)
                queue_an_order(queued, f"{key}:2")
                check_queued_order(await queued.execute(raise_on_error=False))
        finally:
            await client.aclose()

    asyncio.run(main())


# On the cluster: bundles under hash tags owned by each master, in turn.


def tags_on_each_master(rc: redis.RedisCluster, nodes: list[Server], base: str) -> list[str]:
    """One hash tag owned by each master, in the masters' order."""
    by_port: dict[int, str] = {}
    for i in itertools.count():
        tag = f"{{{base}:{i}}}"
        by_port.setdefault(rc.get_node_from_key(tag).port, tag)
        if len(by_port) == len(nodes):
            return [by_port[node.port] for node in nodes]
    raise AssertionError("unreachable")


def test_orders_on_the_cluster_go_to_the_bundles_master(
    cluster_nodes: list[Server], rc: redis.RedisCluster, key: str
) -> None:
    """The first argument is a count, not a key: the calls must reach the master of the keys. On
    every master, with no MOVED at all, and each bundle really lands on its own master."""
    sk = Seckill(rc)
    tags = tags_on_each_master(rc, cluster_nodes, key.strip("{}"))
    sk.get(bundle(tags[0])[0])  # warm-up: the client learns the slots
    before = moved_errors(cluster_nodes)
    for tag in tags:
        check_a_bundle(sk, tag)
        check_order_errors(sk, f"{tag}:errors")
    assert moved_errors(cluster_nodes) == before
    for node, tag in zip(cluster_nodes, tags):
        with node.client() as plain:
            assert sorted(plain.keys(f"{tag}:*")) == sorted([*bundle(tag), *bundle(f"{tag}:errors")])


def test_an_order_across_slots_is_refused_before_sending(rc: redis.RedisCluster, key: str) -> None:
    sk = Seckill(rc)
    with pytest.raises(redis.exceptions.RedisClusterException):
        sk.order([(f"{key}:a", 1), (f"{{other-{key}}}:b", 1)], "lena", "o1")


def test_cluster_pipeline(cluster_nodes: list[Server], rc: redis.RedisCluster, key: str) -> None:
    tags = tags_on_each_master(rc, cluster_nodes, key.strip("{}"))
    pipe = rc.pipeline()
    sk = Seckill(pipe)
    for tag in tags:
        queue_an_order(sk, tag)
    results = sk.execute(raise_on_error=False)
    for i in range(len(tags)):
        check_queued_order(results[8 * i : 8 * i + 8])


def test_async_cluster(cluster_nodes: list[Server], key: str, protocol: int) -> None:
    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[1].port, protocol=protocol)
        try:
            sk = seckill.asyncio.Seckill(client)
            await client.initialize()  # the slots, to find a tag on each master
            by_port: dict[int, str] = {}
            for i in itertools.count():
                tag = f"{{{key.strip('{}')}:{i}}}"
                by_port.setdefault(client.get_node_from_key(tag).port, tag)
                if len(by_port) == len(cluster_nodes):
                    break
            await sk.get(bundle(by_port[cluster_nodes[0].port])[0])
            before = moved_errors(cluster_nodes)
            for tag in by_port.values():
                phone, case, _ = bundle(tag)
                await sk.init(phone, 1)
                await sk.init(case, 1)
                held = await sk.order([(phone, 1), (case, 1)], "lena", "o1", hold=60)
                assert held.taken and held.deadline is not None
                await sk.release(case, "o1")
                assert (await sk.confirm_order([phone, case], "o1")).lines == (None, ConfirmOutcome.LAPSED)
                assert await sk.refund_order([phone, case], "o1") == [refunded(1), RefundResult(RefundOutcome.LAPSED)]
            async with client.pipeline() as pipe:
                queued = seckill.asyncio.Seckill(pipe)
                for tag in by_port.values():
                    queue_an_order(queued, f"{tag}:2")
                results = await queued.execute(raise_on_error=False)
            for i in range(len(by_port)):
                check_queued_order(results[8 * i : 8 * i + 8])
            assert moved_errors(cluster_nodes) == before
        finally:
            await client.aclose()

    asyncio.run(main())
