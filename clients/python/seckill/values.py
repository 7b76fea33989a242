"""Typed values returned by the seckill client (shared by the sync and asyncio clients)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Generic, TypeVar, Union

__all__ = [
    "UNLIMITED",
    "UNLIMITED_STOCK",
    "Outcome",
    "ConfirmOutcome",
    "RefundOutcome",
    "SettleOutcome",
    "DeductResult",
    "RefundResult",
    "OrderResult",
    "OrderConfirmation",
    "Hold",
    "Transfer",
    "ItemInfo",
    "Durable",
    "RequestStatus",
    "OrderState",
    "BuyerRecord",
    "RequestRecord",
    "ScanRecord",
]

T = TypeVar("T")

#: The ``UNLIMITED`` keyword of ``SECKILL.INIT``: pass it as ``stock``.
UNLIMITED: Final = "UNLIMITED"

#: The stock an unlimited item reports everywhere (the largest 64-bit integer).
UNLIMITED_STOCK: Final = 9223372036854775807


class Outcome(enum.Enum):
    """What ``SECKILL.DEDUCT`` did. The value is the reply code (``BOUGHT`` stands for any reply >= 0).

    There is no "replayed" outcome: a retried request id gets the very same reply as the first
    call, on purpose, so a replay cannot be told apart from the original.
    """

    BOUGHT = 0
    SOLD_OUT = -1
    LIMIT_REACHED = -2
    NO_ITEM = -3
    CANCELLED = -4
    NOT_STARTED = -5
    ENDED = -6

    @classmethod
    def from_reply(cls, reply: int) -> Outcome:
        return cls.BOUGHT if reply >= 0 else cls(reply)


class ConfirmOutcome(enum.Enum):
    """What ``SECKILL.CONFIRM`` did. The value is the reply code.

    ``confirm`` sends ``DETAIL``, so it tells ``REFUNDED``, ``LAPSED`` and ``UNKNOWN_REQUEST``
    apart; ``CANCELLED`` is what a ``SECKILL.CONFIRM`` sent without ``DETAIL`` (a raw call)
    answers for any of the three.
    """

    CONFIRMED = 1
    """The hold was pending and is a sale now."""
    ALREADY_FINAL = 0
    """Confirmed before, or bought without a hold: nothing to do."""
    CANCELLED = -4
    """Without ``DETAIL``: refunded, lapsed, or an unknown request id."""
    NO_ITEM = -3
    REFUNDED = -7
    """The purchase was refunded: take no money, or give it back."""
    LAPSED = -8
    """The hold's deadline passed unconfirmed (or it was released): its units went back on sale."""
    UNKNOWN_REQUEST = -9
    """The item never saw this request id."""


class RefundOutcome(enum.Enum):
    """What ``SECKILL.REFUND`` did. The value is the reply code (``REFUNDED`` stands for any reply
    >= 1: the units given back).

    ``refund`` sends ``DETAIL``, so it tells ``ALREADY_REFUNDED``, ``LAPSED`` and
    ``UNKNOWN_REQUEST`` apart; ``NOTHING`` is what a ``SECKILL.REFUND`` sent without ``DETAIL``
    (a raw call) answers for any of the three.
    """

    REFUNDED = 1
    """The units went back on sale now."""
    NOTHING = 0
    """Without ``DETAIL``: an unknown request id, one refunded already, or a hold that lapsed."""
    NO_ITEM = -3
    ALREADY_REFUNDED = -7
    """Refunded before: nothing more is given back (a retried refund gets this)."""
    LAPSED = -8
    """The hold lapsed unconfirmed, and its units went back then."""
    UNKNOWN_REQUEST = -9
    """The item never saw this request id."""

    @classmethod
    def from_reply(cls, reply: int) -> RefundOutcome:
        return cls.REFUNDED if reply >= 1 else cls(reply)


class SettleOutcome(enum.Enum):
    """What ``SECKILL.SETTLE`` did. The value is the reply code."""

    SETTLED = 1
    """The transfer was open and is closed now."""
    ALREADY_SETTLED = 0
    """It was closed before."""
    UNKNOWN = -4
    """No transfer with this id was given out by this item (an ``ADD ... ID`` id is not one)."""
    NO_ITEM = -3


@dataclass(frozen=True, slots=True)
class DeductResult:
    """The reply of ``SECKILL.DEDUCT``: ``stock`` is the remaining stock, set only when ``BOUGHT``.

    ``deadline`` is the hold's deadline in Unix milliseconds, set when the call made a hold (or
    replays one still pending); None for a purchase without a hold and for a refusal.
    """

    outcome: Outcome
    stock: int | None = None
    deadline: int | None = None

    @property
    def ok(self) -> bool:
        """True when the units were bought (or held)."""
        return self.outcome is Outcome.BOUGHT

    @classmethod
    def from_reply(cls, reply: int, deadline: int | None = None) -> DeductResult:
        outcome = Outcome.from_reply(reply)
        return cls(outcome, reply if outcome is Outcome.BOUGHT else None, deadline)


@dataclass(frozen=True, slots=True)
class RefundResult:
    """The reply of ``SECKILL.REFUND``: ``units`` is how many units went back on sale, set only
    when ``REFUNDED``."""

    outcome: RefundOutcome
    units: int | None = None

    @classmethod
    def from_reply(cls, reply: int) -> RefundResult:
        outcome = RefundOutcome.from_reply(reply)
        return cls(outcome, reply if outcome is RefundOutcome.REFUNDED else None)


@dataclass(frozen=True, slots=True)
class OrderResult:
    """The reply of ``SECKILL.MDEDUCT``: an order of several items, taken whole or not at all.

    ``lines`` has one entry per line, in the order's order. When ``taken``, each is a
    ``BOUGHT`` result whose ``stock`` is that item's remaining stock. When not, each line that
    refused the order has its outcome (``SOLD_OUT``, ``LIMIT_REACHED``, ...) and each line that
    would have been taken is None: nothing was taken. A replay of an order a line of which was
    refunded since answers that line ``CANCELLED``, so ``taken`` is False then too.

    ``deadline`` is the hold's deadline in Unix ms, one for every line, set when the order was
    placed with a hold (or replays one still pending); the lines' own ``deadline`` is None.
    """

    taken: bool
    lines: tuple[DeductResult | None, ...]
    deadline: int | None = None

    @property
    def refused(self) -> dict[int, Outcome]:
        """The lines that refused the order, by index: their outcomes (empty when ``taken``)."""
        return {index: line.outcome for index, line in enumerate(self.lines) if line is not None and not line.ok}

    @classmethod
    def from_reply(cls, codes: list[int | None], deadline: int | None = None) -> OrderResult:
        lines = tuple(None if code is None else DeductResult.from_reply(code) for code in codes)
        return cls(all(line is not None and line.ok for line in lines), lines, deadline)


@dataclass(frozen=True, slots=True)
class OrderConfirmation:
    """The reply of ``SECKILL.MCONFIRM``: an order confirmed whole, or not at all.

    ``lines`` has one outcome per line, in order. When ``confirmed``, each is ``CONFIRMED``
    (confirmed now) or ``ALREADY_FINAL``. When not, nothing was confirmed: each line that
    refused has its outcome (``REFUNDED``, ``LAPSED``, ``UNKNOWN_REQUEST`` or ``NO_ITEM``), and
    each line that could have been confirmed is None.
    """

    confirmed: bool
    lines: tuple[ConfirmOutcome | None, ...]

    @property
    def refused(self) -> dict[int, ConfirmOutcome]:
        """The lines that refused the confirmation, by index: their outcomes (empty when
        ``confirmed``)."""
        return {
            index: line
            for index, line in enumerate(self.lines)
            if line is not None and line not in _CONFIRMED_OUTCOMES
        }

    @classmethod
    def from_reply(cls, codes: list[int | None]) -> OrderConfirmation:
        lines = tuple(None if code is None else ConfirmOutcome(code) for code in codes)
        return cls(all(line in _CONFIRMED_OUTCOMES for line in lines), lines)


_CONFIRMED_OUTCOMES = frozenset({ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL})


@dataclass(frozen=True, slots=True)
class Hold:
    """A pending hold, as listed by ``SECKILL.HOLDS``.

    ``request_id`` and ``user`` are ``str`` when they are valid UTF-8, else the raw ``bytes``.
    ``deadline`` is in Unix milliseconds.
    """

    request_id: str | bytes
    user: str | bytes
    qty: int
    deadline: int
    variant: str | bytes | None = None
    """The variant held, on an item with variants; None on one without."""


class RequestStatus(enum.Enum):
    """The status of a request id, as ``SECKILL.SCAN`` and ``SECKILL.STATUS`` report it. The value
    is the server's word."""

    PURCHASED = "purchased"
    """Bought without a hold."""
    HELD = "held"
    """A pending hold."""
    CONFIRMED = "confirmed"
    """A hold that was confirmed."""
    REFUNDED = "refunded"
    LAPSED = "lapsed"
    """A hold whose deadline passed unconfirmed (released or not yet)."""
    UNKNOWN = "unknown"
    """The item never saw this request id (``SECKILL.STATUS`` only)."""


@dataclass(frozen=True, slots=True)
class OrderState:
    """Where one purchase stands, as ``SECKILL.STATUS`` reports it.

    ``user`` is ``str`` when it is valid UTF-8, else the raw ``bytes``; None when the status is
    ``UNKNOWN`` (and ``qty`` 0). ``deadline`` is a hold's, in Unix milliseconds; 0 for a purchase
    made without a hold.
    """

    status: RequestStatus
    user: str | bytes | None
    qty: int
    deadline: int
    variant: str | bytes | None = None
    """The variant bought, on an item with variants (None if the request id is unknown); None on
    an item without."""


@dataclass(frozen=True, slots=True)
class BuyerRecord:
    """A buyer, as ``SECKILL.SCAN`` lists it: ``units`` is what ``SECKILL.BOUGHT`` reports now
    (0 for a buyer that gave everything back).

    ``user`` is ``str`` when it is valid UTF-8, else the raw ``bytes``.
    """

    user: str | bytes
    units: int


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """A purchase made with a request id, as ``SECKILL.SCAN`` lists it.

    ``request_id`` and ``user`` are ``str`` when they are valid UTF-8, else the raw ``bytes``.
    ``deadline`` is the hold's, in Unix milliseconds; 0 for a purchase made without a hold.
    """

    request_id: str | bytes
    user: str | bytes
    qty: int
    status: RequestStatus
    deadline: int


#: One record of ``SECKILL.SCAN``.
ScanRecord = Union[BuyerRecord, RequestRecord]


@dataclass(frozen=True, slots=True)
class Transfer:
    """An open transfer, as listed by ``SECKILL.TRANSFERS``: ``units`` taken out of the item by
    ``TAKE`` and not settled yet.

    ``transfer_id``, ``destination`` and ``variant`` are ``str`` when they are valid UTF-8, else
    the raw ``bytes``; ``destination`` is None when the ``TAKE`` named none, ``variant`` None
    on an item without variants (else the variant the units came out of).
    """

    transfer_id: str | bytes
    units: int
    destination: str | bytes | None
    variant: str | bytes | None = None


@dataclass(frozen=True, slots=True)
class ItemInfo:
    """The counters of ``SECKILL.INFO``, the same under RESP2 and RESP3.

    For a limited item, ``stock + sold - refunded - expired + moved_out - moved_in`` always
    equals ``initial + added``.
    """

    stock: int
    unlimited: bool
    limit: int
    initial: int
    added: int
    sold: int
    refunded: int
    held: int
    holds: int
    expired: int
    buyers: int
    requests: int
    start: int
    end: int
    stream: str | bytes | None
    stream_maxlen: int
    moved_out: int = 0
    """Units ever taken out by ``TAKE`` (0 from a module older than transfers, which moves none)."""
    moved_in: int = 0
    """Units ever received by ``ADD ... ID`` (0 from a module older than transfers)."""
    stream_confirmed: bool = True
    """False when the order stream came with a ``RESTORE`` and no user allowed to write it has
    confirmed it yet (or there is no stream); True from a module older than that check."""
    variants: int = 0
    """How many variants the item sells (``SECKILL.INIT ... VARIANTS``; its other counters then add
    theirs up); 0 for an item without, or from a module older than variants."""


# Not slots=True: on Python 3.11, Durable[T](...) fails on a frozen generic dataclass with slots.
@dataclass(frozen=True)
class Durable(Generic[T]):
    """The reply of a write sent with ``wait_replicas``, and how many replicas have it.

    ``result`` is what the call returns without a wait; ``replicas`` is the number ``WAIT``
    answered (the replicas that acknowledged the write within ``wait_timeout_ms``); ``durable``
    is True when that is at least ``wait_replicas``. When ``durable`` is False the write is done on
    the master but may be lost in a failover: send the same call again until it is durable
    (``confirm`` and ``refund`` are idempotent, and so is ``deduct`` with a ``request_id``).
    """

    result: T
    replicas: int
    durable: bool
