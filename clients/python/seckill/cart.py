"""A cart whose items live on different shards: placed on holds, as a saga that a retry finishes.

``SECKILL.MDEDUCT`` takes an order whole or not at all, but only when its items share a cluster
slot. A cart of items on different shards cannot be taken in one call, so ``Cart`` places it one
line at a time, every line held under the same request id, the cart id:

- ``place`` holds each line in order (``SECKILL.DEDUCT key user qty ID cart_id HOLD s``). If every
  line is held, the cart is placed. If a line refuses (sold out, limit, ...), every line of the
  cart is given back with ``SECKILL.REFUND key cart_id``, and the cart is refused.
- ``confirm`` confirms each line once the cart is paid. If a line cannot be confirmed (its hold
  lapsed, it was refunded, ...), every line is given back, and the payment must be returned.
- ``cancel`` gives back every line.

Every step is idempotent under the cart id, so a call that failed half way (a lost connection,
a crashed process) is finished by sending the very same call again:

- a line held before replays its first reply, and is not held twice;
- a line given back replays ``CANCELLED`` (a refunded request id never takes units again), which
  ``place`` reads as "this cart was refused before": it gives back every line again (a refund
  done before answers ``ALREADY_REFUNDED``) and reports the cart refused;
- ``confirm`` of a line confirmed before answers ``ALREADY_FINAL``; one given back answers
  ``REFUNDED``, and every line is given back again.

So a ``place`` stopped between any two of its commands and then called again ends with every line
held under the cart id or none, and no unit taken twice. A line that refused once may not refuse
on the retry (stock came back): the retry then places the cart, which is just as consistent.

Nothing is atomic across shards: between the first hold and the last, other buyers see the held
units gone, and a reader may see part of a cart held. Each line's hold has its own deadline (the
holds are made one after the other); ``CartPlacement.deadline`` is the earliest, the time to be
paid by. A cart must not name one item twice (its lines share the cart id), and a cart id must
not be reused for another cart.

``Cart`` is the sync helper and ``AsyncCart`` (also ``seckill.asyncio.Cart``) its asyncio twin;
both run the same steps, written once below as generators of calls.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, TypeVar

from . import Seckill, commands
from .commands import Key, Lines
from .values import ConfirmOutcome, DeductResult, Outcome, RefundResult

__all__ = ["Cart", "AsyncCart", "CartPlacement", "CartPayment"]

# A call a saga asks for: given a Seckill (sync or asyncio), it makes one command and returns its
# result (or, on an asyncio Seckill, an awaitable of it). The saga is suspended until it has run.
_Call = Callable[[Any], Any]
T = TypeVar("T")

_PAID = frozenset({ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL})


@dataclass(frozen=True, slots=True)
class CartPlacement:
    """What ``Cart.place`` came to.

    ``placed`` is True when every line is held under the cart id. ``lines`` is each line's
    ``DeductResult``, in order: every line when placed; when refused, the lines up to and
    including the one that refused (``refused_line``, its index), as no later line was sent.
    ``deadline`` is the earliest deadline of the held lines in Unix ms (None when refused, or
    when a retry finds every hold confirmed already). ``given_back`` is the ``REFUND`` of every
    line of a refused cart, in order (empty when placed).
    """

    placed: bool
    lines: tuple[DeductResult, ...]
    deadline: int | None = None
    refused_line: int | None = None
    given_back: tuple[RefundResult, ...] = ()

    @property
    def refusal(self) -> Outcome | None:
        """Why the cart was refused: the refusing line's outcome (``CANCELLED`` when a retry finds
        the cart refused or cancelled before); None when placed."""
        return None if self.refused_line is None else self.lines[self.refused_line].outcome


@dataclass(frozen=True, slots=True)
class CartPayment:
    """What ``Cart.confirm`` came to.

    ``paid`` is True when every line is confirmed (``CONFIRMED`` now or ``ALREADY_FINAL``): keep
    the payment. When False, ``failed_line`` is the index of the first line that could not be
    confirmed, ``lines`` the outcomes up to and including it, and ``given_back`` the ``REFUND``
    of every line of the cart: no unit stays taken, so give the payment back.
    """

    paid: bool
    lines: tuple[ConfirmOutcome, ...]
    failed_line: int | None = None
    given_back: tuple[RefundResult, ...] = ()

    @property
    def failure(self) -> ConfirmOutcome | None:
        """Why the cart could not be paid: the failed line's outcome (``LAPSED``, ``REFUNDED``,
        ``UNKNOWN_REQUEST`` or ``NO_ITEM``); None when paid."""
        return None if self.failed_line is None else self.lines[self.failed_line]


def _cart_lines(lines: Lines) -> list[tuple[Key, int, Optional[Key]]]:
    pairs = lines if isinstance(lines, (str, bytes, Mapping)) else list(lines)  # read an iterator once
    commands.order_lines(pairs)  # the types, before any command is sent
    given = pairs.items() if isinstance(pairs, Mapping) else pairs
    checked = [(line[0], line[1], line[2] if len(line) == 3 else None) for line in given]
    _distinct([key for key, _, _ in checked])
    return checked


def _cart_keys(keys: Iterable[Key]) -> list[Key]:
    checked = list(commands.order_keys(keys))
    _distinct(checked)
    return checked


def _distinct(keys: Sequence[Key]) -> None:
    # Two lines of one item under one request id would be one purchase (a replay), not two.
    if len(set(keys)) != len(keys):
        raise ValueError("a cart names each item once: merge its lines into one quantity")


def _give_back(cart_id: Key, keys: Sequence[Key]) -> Generator[_Call, Any, tuple[RefundResult, ...]]:
    """REFUND every line, held or not: a refund is idempotent, and one of a line never held
    answers ``UNKNOWN_REQUEST`` and changes nothing."""
    given_back = []
    for key in keys:
        # Each call runs before the saga resumes, so the lambda sees this iteration's key.
        given_back.append((yield lambda seckill: seckill.refund(key, cart_id)))
    return tuple(given_back)


def _place(
    cart_id: Key, user: Key, lines: list[tuple[Key, int, Optional[Key]]], hold_seconds: int
) -> Generator[_Call, Any, CartPlacement]:
    keys = [key for key, _, _ in lines]
    results: list[DeductResult] = []
    for index, (key, qty, variant) in enumerate(lines):
        result = yield lambda seckill: seckill.deduct(
            key, user, qty, request_id=cart_id, hold=hold_seconds, variant=variant
        )
        results.append(result)
        if not result.ok:
            # Refused now, or CANCELLED: given back by an earlier call that was refused or
            # cancelled. Either way no line may stay held.
            given_back = yield from _give_back(cart_id, keys)
            return CartPlacement(False, tuple(results), None, index, given_back)
    deadlines = [result.deadline for result in results if result.deadline is not None]
    return CartPlacement(True, tuple(results), min(deadlines, default=None))


def _confirm(cart_id: Key, keys: list[Key]) -> Generator[_Call, Any, CartPayment]:
    outcomes: list[ConfirmOutcome] = []
    for index, key in enumerate(keys):
        outcome = yield lambda seckill: seckill.confirm(key, cart_id)
        outcomes.append(outcome)
        if outcome not in _PAID:
            # Lines confirmed already are sales now; a REFUND gives them back all the same.
            given_back = yield from _give_back(cart_id, keys)
            return CartPayment(False, tuple(outcomes), index, given_back)
    return CartPayment(True, tuple(outcomes))


def _cancel(cart_id: Key, keys: list[Key]) -> Generator[_Call, Any, list[RefundResult]]:
    return list((yield from _give_back(cart_id, keys)))


def _run(seckill: Seckill, saga: Generator[_Call, Any, T]) -> T:
    reply = None
    while True:
        try:
            call = saga.send(reply)
        except StopIteration as finished:
            result: T = finished.value
            return result
        reply = call(seckill)


async def _run_async(seckill: Any, saga: Generator[_Call, Any, T]) -> T:
    reply = None
    while True:
        try:
            call = saga.send(reply)
        except StopIteration as finished:
            result: T = finished.value
            return result
        reply = await call(seckill)


def _check_place(
    cart_id: Key, user: Key, lines: Lines, hold_seconds: int
) -> list[tuple[Key, int, Optional[Key]]]:
    if isinstance(hold_seconds, bool) or not isinstance(hold_seconds, int):
        # A cart is placed on holds: a line must not be a sale before the cart is paid.
        raise TypeError(f"hold_seconds must be an int, not {type(hold_seconds).__name__}")
    checked = _cart_lines(lines)
    # The types of the user and the cart id: a bad one is refused before the first line is held.
    commands.deduct(checked[0][0], user, 1, request_id=cart_id, hold=hold_seconds, hold_until=None)
    return checked


class Cart:
    """A cart over items on any shards, placed on holds under the cart id (see the module's text).

    ``client`` is a ``seckill.Seckill`` or a client it takes to wrap (``redis.Redis``,
    ``redis.RedisCluster``, valkey-py's, a GLIDE sync client), not a pipeline: each step waits for
    the one before. Errors are raised as the client raises them (a ``ConnectionLostError``: send
    the same call again).
    """

    def __init__(self, client: Any) -> None:
        seckill = client if isinstance(client, Seckill) else Seckill(client)
        if seckill._queues:
            raise TypeError("a Cart needs a client, not a pipeline")
        self._seckill = seckill

    @property
    def seckill(self) -> Seckill:
        """The client the items are reached through."""
        return self._seckill

    def __repr__(self) -> str:
        return f"Cart({self._seckill!r})"

    def place(self, cart_id: Key, user: Key, lines: Lines, hold_seconds: int) -> CartPlacement:
        """Hold every line (``(key, qty)`` pairs in order, or a mapping) for ``hold_seconds``
        under ``cart_id``, or none: a ``CartPlacement``. Send the same call again to finish one
        that failed or was interrupted."""
        checked = _check_place(cart_id, user, lines, hold_seconds)
        return _run(self._seckill, _place(cart_id, user, checked, hold_seconds))

    def confirm(self, cart_id: Key, keys: Sequence[Key]) -> CartPayment:
        """The cart was paid: confirm every line, or give every line back when one cannot be
        confirmed (a ``CartPayment`` whose ``paid`` is False: return the money)."""
        return _run(self._seckill, _confirm(cart_id, _cart_keys(keys)))

    def cancel(self, cart_id: Key, keys: Sequence[Key]) -> list[RefundResult]:
        """Give back every line of the cart: one ``RefundResult`` per key, in order."""
        return _run(self._seckill, _cancel(cart_id, _cart_keys(keys)))


class AsyncCart:
    """The asyncio twin of ``Cart`` (also ``seckill.asyncio.Cart``): the same steps, each
    awaited in turn.

    ``client`` is a ``seckill.asyncio.Seckill`` or a ``redis.asyncio`` client to wrap (not a
    pipeline).
    """

    def __init__(self, client: Any) -> None:
        from .asyncio import Seckill as AsyncSeckill  # seckill.asyncio imports this module

        seckill = client if isinstance(client, AsyncSeckill) else AsyncSeckill(client)
        if seckill._queues:
            raise TypeError("a Cart needs a client, not a pipeline")
        self._seckill = seckill

    @property
    def seckill(self) -> Any:
        """The ``seckill.asyncio.Seckill`` the items are reached through."""
        return self._seckill

    def __repr__(self) -> str:
        return f"seckill.asyncio.Cart({self._seckill!r})"

    async def place(self, cart_id: Key, user: Key, lines: Lines, hold_seconds: int) -> CartPlacement:
        """See ``Cart.place``."""
        checked = _check_place(cart_id, user, lines, hold_seconds)
        return await _run_async(self._seckill, _place(cart_id, user, checked, hold_seconds))

    async def confirm(self, cart_id: Key, keys: Sequence[Key]) -> CartPayment:
        """See ``Cart.confirm``."""
        return await _run_async(self._seckill, _confirm(cart_id, _cart_keys(keys)))

    async def cancel(self, cart_id: Key, keys: Sequence[Key]) -> list[RefundResult]:
        """See ``Cart.cancel``."""
        return await _run_async(self._seckill, _cancel(cart_id, _cart_keys(keys)))
