"""The cart helper on a real 3-master cluster, its items on three masters: placed, paid, cancelled,
refused; and a process running it killed after each of its commands, then the same call resumed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

import seckill.asyncio
from cart_child import STOPPED_DEAD
from seckill import (
    Cart,
    CartPayment,
    CartPlacement,
    ConfirmOutcome,
    DeductResult,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestStatus,
    Seckill,
)
from servers import Server

CHILD = Path(__file__).with_name("cart_child.py")
HOLD_SECONDS = 900
QUANTITIES = (1, 2, 1)
INITIAL = 5

REFUNDED_1 = RefundResult(RefundOutcome.REFUNDED, 1)
UNKNOWN = RefundResult(RefundOutcome.UNKNOWN_REQUEST)


def items_on_each_master(client: redis.RedisCluster | redis.asyncio.RedisCluster, nodes: list[Server]) -> list[str]:
    """Three new item names, no hash tag, one owned by each master (in the masters' order)."""
    base = f"cart-item:{uuid.uuid4().hex[:12]}"
    by_port: dict[int, str] = {}
    for i in itertools.count():
        name = f"{base}:{i}"
        by_port.setdefault(client.get_node_from_key(name).port, name)
        if len(by_port) == len(nodes):
            return [by_port[node.port] for node in nodes]
    raise AssertionError("unreachable")


def new_cart(sk: Seckill, rc: redis.RedisCluster, nodes: list[Server], stocks=(INITIAL,) * 3):  # type: ignore[no-untyped-def]
    """Items on the three masters with ``stocks``, a cart id and a user of their own, and the
    cart's lines (``QUANTITIES`` of each item)."""
    keys = items_on_each_master(rc, nodes)
    for key, stock in zip(keys, stocks):
        assert sk.init(key, stock)
    tag = uuid.uuid4().hex[:8]
    return f"cart-{tag}", f"user-{tag}", list(zip(keys, QUANTITIES))


def check_held_or_given_back(sk: Seckill, cart_id: str, user: str, lines, stocks, held: bool) -> None:  # type: ignore[no-untyped-def]
    """Every line held under the cart id, or none; no unit taken twice."""
    for (key, qty), initial in zip(lines, stocks):
        state = sk.status(key, cart_id)
        info = sk.info(key)
        assert state is not None and info is not None
        if held:
            assert (state.status, state.user, state.qty) == (RequestStatus.HELD, user, qty)
        else:
            assert state.status in (RequestStatus.REFUNDED, RequestStatus.LAPSED, RequestStatus.UNKNOWN), key
        units = qty if held else 0
        assert sk.bought(key, user) == units
        assert sk.get(key) == initial - units
        assert info.stock + info.sold == info.initial + info.refunded + info.expired
        assert info.sold - info.refunded - info.expired == units


def test_place_confirm_cancel(cluster_nodes: list[Server], rc: redis.RedisCluster) -> None:
    sk = Seckill(rc)
    cart = Cart(rc)
    cart_id, user, lines = new_cart(sk, rc, cluster_nodes)
    keys = [key for key, _ in lines]
    for node, key in zip(cluster_nodes, keys):  # one item on each master, for real
        with node.client() as plain:
            assert plain.exists(key) == 1

    placed = cart.place(cart_id, user, lines, HOLD_SECONDS)
    deadlines = [sk.status(key, cart_id).deadline for key in keys]
    assert placed == CartPlacement(
        True, tuple(DeductResult(Outcome.BOUGHT, INITIAL - qty, deadline) for qty, deadline in zip(QUANTITIES, deadlines)), min(deadlines)
    )
    assert placed.refusal is None
    assert cart.place(cart_id, user, lines, HOLD_SECONDS) == placed  # a retry: the same, nothing more taken
    check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=True)

    paid = cart.confirm(cart_id, keys)
    assert paid == CartPayment(True, (ConfirmOutcome.CONFIRMED,) * 3) and paid.failure is None
    assert cart.confirm(cart_id, keys) == CartPayment(True, (ConfirmOutcome.ALREADY_FINAL,) * 3)
    assert [sk.status(key, cart_id).status for key in keys] == [RequestStatus.CONFIRMED] * 3

    # Cancelled after payment (a return): every line goes back, once.
    assert cart.cancel(cart_id, keys) == [RefundResult(RefundOutcome.REFUNDED, qty) for qty in QUANTITIES]
    assert cart.cancel(cart_id, keys) == [RefundResult(RefundOutcome.ALREADY_REFUNDED)] * 3
    check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=False)
    # A place sent again for a cancelled cart never takes a unit again.
    again = cart.place(cart_id, user, lines, HOLD_SECONDS)
    assert (again.placed, again.refused_line, again.refusal) == (False, 0, Outcome.CANCELLED)
    assert again.given_back == (RefundResult(RefundOutcome.ALREADY_REFUNDED),) * 3
    check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=False)


@pytest.mark.parametrize("sold_out_line", [0, 1, 2])
def test_a_refused_cart_leaves_no_line_held(cluster_nodes: list[Server], rc: redis.RedisCluster, sold_out_line: int) -> None:
    sk = Seckill(rc)
    cart = Cart(sk)
    stocks = [INITIAL] * 3
    stocks[sold_out_line] = 0
    cart_id, user, lines = new_cart(sk, rc, cluster_nodes, stocks)
    refused = cart.place(cart_id, user, lines, HOLD_SECONDS)
    assert (refused.placed, refused.refused_line, refused.refusal, refused.deadline) == (
        False,
        sold_out_line,
        Outcome.SOLD_OUT,
        None,
    )
    assert [line.ok for line in refused.lines] == [True] * sold_out_line + [False]  # later lines not sent
    assert refused.given_back == (REFUNDED_1, RefundResult(RefundOutcome.REFUNDED, 2), REFUNDED_1)[:sold_out_line] + (
        UNKNOWN,
    ) * (3 - sold_out_line)
    check_held_or_given_back(sk, cart_id, user, lines, stocks, held=False)
    # A retry: refused again (CANCELLED: given back before, or SOLD_OUT again), nothing held.
    retried = cart.place(cart_id, user, lines, HOLD_SECONDS)
    assert not retried.placed and retried.refusal is (Outcome.SOLD_OUT if sold_out_line == 0 else Outcome.CANCELLED)
    check_held_or_given_back(sk, cart_id, user, lines, stocks, held=False)


def test_a_lapsed_line_gives_the_whole_cart_back(cluster_nodes: list[Server], rc: redis.RedisCluster) -> None:
    sk = Seckill(rc)
    cart = Cart(rc)
    cart_id, user, lines = new_cart(sk, rc, cluster_nodes)
    keys = [key for key, _ in lines]
    assert cart.place(cart_id, user, lines, HOLD_SECONDS).placed
    assert sk.release(keys[1], cart_id) == 1  # its hold lapses, as at its deadline
    unpaid = cart.confirm(cart_id, keys)
    assert unpaid == CartPayment(
        False,
        (ConfirmOutcome.CONFIRMED, ConfirmOutcome.LAPSED),
        1,
        (REFUNDED_1, RefundResult(RefundOutcome.LAPSED), REFUNDED_1),
    )
    assert unpaid.failure is ConfirmOutcome.LAPSED
    check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=False)
    again = cart.confirm(cart_id, keys)  # sent again: still not paid, nothing taken
    assert (again.paid, again.failed_line, again.failure) == (False, 0, ConfirmOutcome.REFUNDED)
    check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=False)


def test_arguments_are_checked_before_any_command(rc: redis.RedisCluster) -> None:
    cart = Cart(rc)
    with pytest.raises(ValueError):
        cart.place("c1", "ann", [("a", 1), ("a", 2)], HOLD_SECONDS)  # one item twice
    with pytest.raises(ValueError):
        cart.place("c1", "ann", [], HOLD_SECONDS)
    with pytest.raises(TypeError):
        cart.place("c1", "ann", [("a", 1)], None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        cart.place("c1", "ann", "a", HOLD_SECONDS)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        cart.confirm("c1", ["a", "a"])
    with pytest.raises(TypeError):
        cart.cancel("c1", "a")
    with pytest.raises(TypeError):
        Cart(rc.pipeline())


def test_async_cart(cluster_nodes: list[Server]) -> None:
    async def main() -> None:
        client = redis.asyncio.RedisCluster(host="127.0.0.1", port=cluster_nodes[2].port)
        try:
            await client.initialize()
            sk = seckill.asyncio.Seckill(client)
            cart = seckill.asyncio.Cart(client)
            keys = items_on_each_master(client, cluster_nodes)
            for key in keys:
                await sk.init(key, 1)
            lines = {key: 1 for key in keys}
            placed = await cart.place("cart-a", "ann", lines, HOLD_SECONDS)
            assert placed.placed and placed.lines == tuple(DeductResult(Outcome.BOUGHT, 0, placed.lines[i].deadline) for i in range(3))
            refused = await cart.place("cart-b", "bob", lines, HOLD_SECONDS)
            assert (refused.refused_line, refused.refusal, refused.given_back) == (0, Outcome.SOLD_OUT, (UNKNOWN,) * 3)
            assert await cart.confirm("cart-a", keys) == CartPayment(True, (ConfirmOutcome.CONFIRMED,) * 3)
            assert await cart.cancel("cart-a", keys) == [REFUNDED_1] * 3
            assert [await sk.get(key) for key in keys] == [1, 1, 1]
        finally:
            await client.aclose()

    asyncio.run(main())


# A process killed after each command of a cart's saga, and the same call resumed.


@pytest.fixture
def plain_rc(cluster_nodes: list[Server]) -> Iterator[redis.RedisCluster]:
    """A cluster client, one protocol only: the tests below start many processes each."""
    client = redis.RedisCluster(host="127.0.0.1", port=cluster_nodes[0].port)
    yield client
    client.close()


def statuses(sk: Seckill, keys: list[str], cart_id: str) -> list[RequestStatus]:
    return [sk.status(key, cart_id).status for key in keys]  # type: ignore[union-attr]


HELD, REFUNDED, UNSEEN = RequestStatus.HELD, RequestStatus.REFUNDED, RequestStatus.UNKNOWN


def after_place(done: int, sold_out_line: int | None) -> list[RequestStatus]:
    """Each line's status once ``place`` did its first ``done`` commands: a DEDUCT per line up to
    the sold-out one, then a REFUND per line."""
    holds = min(done, 3 if sold_out_line is None else sold_out_line)
    refunds = 0 if sold_out_line is None else max(0, done - (sold_out_line + 1))
    return [REFUNDED if line < min(refunds, holds) else HELD if line < holds else UNSEEN for line in range(3)]


def after_confirm(done: int, lapsed_line: int | None) -> list[RequestStatus]:
    """Each line's status once ``confirm`` did its first ``done`` commands: a CONFIRM per line up
    to the lapsed one, then a REFUND per line."""
    confirms = min(done, 3 if lapsed_line is None else lapsed_line)
    refunds = 0 if lapsed_line is None else max(0, done - (lapsed_line + 1))
    return [
        RequestStatus.LAPSED
        if line == lapsed_line
        else REFUNDED
        if line < refunds
        else RequestStatus.CONFIRMED
        if line < confirms
        else HELD
        for line in range(3)
    ]


def run_stopping_dead(cluster_nodes: list[Server], stop_after: int, call: str, **spec: object) -> int | None:
    """Runs ``call`` of a Cart in a child process that stops dead after its ``stop_after``-th
    command: None if it did, else the number of commands the whole call sent."""
    spec = {"port": cluster_nodes[0].port, "stop_after": stop_after, "call": call, **spec}
    child = subprocess.run(
        [sys.executable, str(CHILD), json.dumps(spec)], capture_output=True, text=True, timeout=60
    )
    if child.returncode == STOPPED_DEAD:
        return None
    assert child.returncode == 0, child.stderr
    return int(json.loads(child.stdout)["sent"])


@pytest.mark.parametrize(
    ("sold_out_line", "commands"),
    [(None, 3), (1, 2 + 3), (2, 3 + 3)],
    ids=["placed", "refused-by-line-1", "refused-by-line-2"],
)
def test_place_killed_after_each_command_then_resumed(
    cluster_nodes: list[Server], plain_rc: redis.RedisCluster, sold_out_line: int | None, commands: int
) -> None:
    """A full place sends ``commands`` commands (the holds up to the refusing line, then a
    refund per line). Killed after each of them, then called again: every line held, or none."""
    sk = Seckill(plain_rc)
    cart = Cart(sk)
    stocks = [INITIAL] * 3
    if sold_out_line is not None:
        stocks[sold_out_line] = 0
    for stop_after in itertools.count(1):
        cart_id, user, lines = new_cart(sk, plain_rc, cluster_nodes, stocks)
        spec = {"cart_id": cart_id, "user": user, "lines": lines, "hold_seconds": HOLD_SECONDS}
        sent = run_stopping_dead(cluster_nodes, stop_after, "place", **spec)
        if sent is not None:  # the call ended before its stop_after-th command: all were tried
            assert (sent, stop_after) == (commands, commands + 1)
            break
        # Where the child stopped: the first stop_after commands were done, not one more.
        keys = [key for key, _ in lines]
        assert statuses(sk, keys, cart_id) == after_place(stop_after, sold_out_line)
        resumed = cart.place(cart_id, user, lines, HOLD_SECONDS)
        placed = sold_out_line is None
        assert resumed.placed is placed, (stop_after, resumed)
        check_held_or_given_back(sk, cart_id, user, lines, stocks, held=placed)
        if placed:
            assert cart.confirm(cart_id, keys).paid
            assert [sk.status(key, cart_id).status for key in keys] == [RequestStatus.CONFIRMED] * 3
        else:
            # Killed before any refund: the resumed call is refused by the same line; after one,
            # by the first line, which was given back.
            assert (resumed.refused_line, resumed.refusal) in ((sold_out_line, Outcome.SOLD_OUT), (0, Outcome.CANCELLED))


@pytest.mark.parametrize(("lapsed_line", "commands"), [(None, 3), (1, 2 + 3)], ids=["paid", "lapsed-line-1"])
def test_confirm_killed_after_each_command_then_resumed(
    cluster_nodes: list[Server], plain_rc: redis.RedisCluster, lapsed_line: int | None, commands: int
) -> None:
    """A confirm killed after each of its commands, then called again: every line confirmed, or
    (a line lapsed) every line given back."""
    sk = Seckill(plain_rc)
    cart = Cart(sk)
    for stop_after in itertools.count(1):
        cart_id, user, lines = new_cart(sk, plain_rc, cluster_nodes)
        keys = [key for key, _ in lines]
        assert cart.place(cart_id, user, lines, HOLD_SECONDS).placed
        if lapsed_line is not None:
            sk.release(keys[lapsed_line], cart_id)
        sent = run_stopping_dead(cluster_nodes, stop_after, "confirm", cart_id=cart_id, keys=keys)
        if sent is not None:
            assert (sent, stop_after) == (commands, commands + 1)
            break
        assert statuses(sk, keys, cart_id) == after_confirm(stop_after, lapsed_line)
        resumed = cart.confirm(cart_id, keys)
        if lapsed_line is None:
            assert resumed.paid, (stop_after, resumed)
            assert [sk.status(key, cart_id).status for key in keys] == [RequestStatus.CONFIRMED] * 3
            for (key, qty) in lines:
                assert sk.bought(key, user) == qty and sk.get(key) == INITIAL - qty
        else:
            assert not resumed.paid, (stop_after, resumed)
            check_held_or_given_back(sk, cart_id, user, lines, [INITIAL] * 3, held=False)
