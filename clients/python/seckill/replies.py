"""Turning the server's replies to SECKILL.* commands into typed values.

The functions here are registered as redis-py (or valkey-py) response callbacks, so the client itself
decodes the replies: for direct calls, pipelines and transactions, standalone and cluster, RESP2
and RESP3. GLIDE has no such hook: ``drivers`` calls them on its replies (lists, and under RESP3
dicts with bytes keys).
Each one accepts a value it produced already (so decoding twice changes nothing) and, where
redis-py hands an error reply to a callback (its cluster pipelines do), returns the typed error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import raise_typed, typed_error
from .values import (
    BuyerRecord,
    ConfirmOutcome,
    DeductResult,
    Durable,
    Hold,
    ItemInfo,
    OrderConfirmation,
    OrderResult,
    OrderState,
    RefundResult,
    RequestRecord,
    RequestStatus,
    ScanRecord,
    SettleOutcome,
    Transfer,
)

__all__ = ["RESPONSE_CALLBACKS", "durable_result", "register_response_callbacks"]

_NO_ITEM = -3

_INFO_INTS = (
    "stock",
    "limit",
    "initial",
    "added",
    "sold",
    "refunded",
    "held",
    "holds",
    "expired",
    "buyers",
    "requests",
    "start",
    "end",
    "stream_maxlen",
)

# Fields that a module older than stock transfers does not send; they default to 0 there.
_INFO_INTS_SINCE_TRANSFERS = ("moved_out", "moved_in", "variants")


def _str_if_utf8(value: str | bytes) -> str | bytes:
    """A user id, request id or key as str when it is UTF-8, else as the bytes the server sent."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def _passing_errors(decode: Callable[[Any], Any]) -> Callable[..., Any]:
    def callback(reply: Any, **options: Any) -> Any:
        if isinstance(reply, BaseException):
            return typed_error(reply) or reply
        return decode(reply)

    callback.__name__ = callback.__qualname__ = decode.__name__
    callback.__doc__ = decode.__doc__
    return callback


def flag(reply: Any) -> bool:
    """INIT: True created or replaced, False the item existed."""
    return bool(reply)


def deduct_result(reply: Any) -> DeductResult:
    """DEDUCT: the integer code, or ``[code, deadline]`` when it was sent with WITHDEADLINE (the
    deadline nil when the call made no hold)."""
    if isinstance(reply, DeductResult):
        return reply
    if isinstance(reply, (list, tuple)):
        code, deadline = reply
        return DeductResult.from_reply(int(code), None if deadline is None else int(deadline))
    return DeductResult.from_reply(int(reply))


def confirm_outcome(reply: Any) -> ConfirmOutcome:
    if isinstance(reply, ConfirmOutcome):
        return reply
    return ConfirmOutcome(int(reply))


def refund_result(reply: Any) -> RefundResult:
    if isinstance(reply, RefundResult):
        return reply
    return RefundResult.from_reply(int(reply))


def _codes(lines: Any) -> list[int | None]:
    return [None if line is None else int(line) for line in lines]


def order_result(reply: Any) -> OrderResult:
    """MDEDUCT: one entry per line (a stock, a code, or nil for a line that would have been
    taken), or ``[lines, deadline]`` when it was sent with WITHDEADLINE. A line is never an
    array, so the two shapes cannot be mistaken for each other."""
    if isinstance(reply, OrderResult):
        return reply
    if reply and isinstance(reply[0], (list, tuple)):
        lines, deadline = reply
        return OrderResult.from_reply(_codes(lines), None if deadline is None else int(deadline))
    return OrderResult.from_reply(_codes(reply))


def order_confirmation(reply: Any) -> OrderConfirmation:
    """MCONFIRM: one code per line, nil on the lines that could have been confirmed."""
    if isinstance(reply, OrderConfirmation):
        return reply
    return OrderConfirmation.from_reply(_codes(reply))


def refund_results(reply: Any) -> list[RefundResult]:
    """MREFUND: one REFUND reply per line."""
    return [line if isinstance(line, RefundResult) else RefundResult.from_reply(int(line)) for line in reply]


def settle_outcome(reply: Any) -> SettleOutcome:
    if isinstance(reply, SettleOutcome):
        return reply
    return SettleOutcome(int(reply))


def count_or_none(reply: Any) -> int | None:
    """RELEASE, ADD, TAKE: the count, or None when there is no item (-3)."""
    if reply is None or reply == _NO_ITEM:
        return None
    return int(reply)


def true_or_none(reply: Any) -> bool | None:
    """WINDOW, STREAM: True, or None when there is no item (-3)."""
    if reply is None or reply == _NO_ITEM:
        return None
    return True


def int_or_none(reply: Any) -> int | None:
    """GET, BOUGHT: the integer, or None when there is no item (nil)."""
    return None if reply is None else int(reply)


def holds(reply: Any) -> list[Hold] | None:
    if reply is None:
        return None
    return [
        hold
        if isinstance(hold, Hold)
        else Hold(
            _str_if_utf8(hold[0]),
            _str_if_utf8(hold[1]),
            int(hold[2]),
            int(hold[3]),
            _str_if_utf8(hold[4]) if len(hold) > 4 else None,
        )
        for hold in reply
    ]


def transfers(reply: Any) -> list[Transfer] | None:
    if reply is None:
        return None
    return [
        entry
        if isinstance(entry, Transfer)
        else Transfer(
            _str_if_utf8(entry[0]),
            int(entry[1]),
            None if entry[2] is None else _str_if_utf8(entry[2]),
            _str_if_utf8(entry[3]) if len(entry) > 3 else None,
        )
        for entry in reply
    ]


def _scan_record(record: Any) -> ScanRecord:
    if isinstance(record, (BuyerRecord, RequestRecord)):
        return record
    kind = _str_if_utf8(record[0])
    if kind == "buyer":
        return BuyerRecord(_str_if_utf8(record[1]), int(record[2]))
    if kind == "request":
        status = _str_if_utf8(record[4])
        return RequestRecord(
            _str_if_utf8(record[1]),
            _str_if_utf8(record[2]),
            int(record[3]),
            RequestStatus(status),
            int(record[5]),
        )
    raise ValueError(f"unexpected record in the reply to SECKILL.SCAN: {record!r}")


def scan_page(reply: Any) -> tuple[int, list[ScanRecord]]:
    """SCAN: the next cursor (0: the scan is over) and the page's records. A missing item answers
    ``(0, [])``."""
    cursor, records = reply
    return int(cursor), [_scan_record(record) for record in records]


def _fields_by_name(reply: Any) -> dict[Any, Any]:
    """INFO, STATUS: a map under RESP3, ``field, value, field, value, ...`` under RESP2; by field
    name."""
    fields: Mapping[Any, Any]
    if isinstance(reply, Mapping):
        fields = reply
    else:
        pairs: Sequence[Any] = reply
        fields = dict(zip(pairs[0::2], pairs[1::2]))
    return {_str_if_utf8(name): value for name, value in fields.items()}


def order_state(reply: Any) -> OrderState | None:
    """STATUS: where one purchase stands, None if no item."""
    if reply is None or isinstance(reply, OrderState):
        return reply
    by_name = _fields_by_name(reply)
    user = by_name["user"]
    variant = by_name.get("variant")
    return OrderState(
        status=RequestStatus(_str_if_utf8(by_name["status"])),
        user=None if user is None else _str_if_utf8(user),
        qty=int(by_name["qty"]),
        deadline=int(by_name["deadline"]),
        variant=None if variant is None else _str_if_utf8(variant),
    )


def item_info(reply: Any) -> ItemInfo | None:
    if reply is None or isinstance(reply, ItemInfo):
        return reply
    by_name = _fields_by_name(reply)
    stream = by_name["stream"]
    return ItemInfo(
        unlimited=bool(by_name["unlimited"]),
        stream=None if stream is None else _str_if_utf8(stream),
        **{name: int(by_name[name]) for name in _INFO_INTS},
        **{name: int(by_name[name]) for name in _INFO_INTS_SINCE_TRANSFERS if name in by_name},
        **({"stream_confirmed": bool(by_name["stream_confirmed"])} if "stream_confirmed" in by_name else {}),
    )


def variants(reply: Any) -> dict[str | bytes, int] | None:
    """Each variant's name and stock, in the order INIT named them: a flat array under RESP2, a
    map under RESP3 (dicts keep their order)."""
    if reply is None:
        return None
    if isinstance(reply, dict):
        pairs = list(reply.items())
    else:
        pairs = list(zip(reply[0::2], reply[1::2]))
    return {_str_if_utf8(name): int(stock) for name, stock in pairs}


RESPONSE_CALLBACKS: dict[str, Callable[..., Any]] = {
    "SECKILL.INIT": _passing_errors(flag),
    "SECKILL.DEDUCT": _passing_errors(deduct_result),
    "SECKILL.CONFIRM": _passing_errors(confirm_outcome),
    "SECKILL.RELEASE": _passing_errors(count_or_none),
    "SECKILL.REFUND": _passing_errors(refund_result),
    "SECKILL.MDEDUCT": _passing_errors(order_result),
    "SECKILL.MCONFIRM": _passing_errors(order_confirmation),
    "SECKILL.MREFUND": _passing_errors(refund_results),
    "SECKILL.ADD": _passing_errors(count_or_none),
    "SECKILL.WINDOW": _passing_errors(true_or_none),
    "SECKILL.STREAM": _passing_errors(true_or_none),
    "SECKILL.GET": _passing_errors(int_or_none),
    "SECKILL.BOUGHT": _passing_errors(int_or_none),
    "SECKILL.HOLDS": _passing_errors(holds),
    "SECKILL.INFO": _passing_errors(item_info),
    "SECKILL.STATUS": _passing_errors(order_state),
    "SECKILL.SCAN": _passing_errors(scan_page),
    "SECKILL.TAKE": _passing_errors(count_or_none),
    "SECKILL.SETTLE": _passing_errors(settle_outcome),
    "SECKILL.TRANSFERS": _passing_errors(transfers),
    "SECKILL.VARIANTS": _passing_errors(variants),
}


def register_response_callbacks(client: Any) -> None:
    """Register the callbacks on a redis-py or valkey-py client or pipeline (sync or asyncio,
    standalone or cluster). A pipeline shares its callbacks with the client it came from, so they land there."""
    setter = getattr(client, "set_response_callback", None)
    if setter is None:
        # redis-py 5's asyncio ClusterPipeline has no setter; its cluster client holds the callbacks.
        owner = getattr(client, "cluster_client", None) or getattr(client, "_client", None)
        setter = getattr(owner, "set_response_callback", None)
    if setter is None:
        raise TypeError(f"cannot register response callbacks on {type(client).__name__}")
    for command, callback in RESPONSE_CALLBACKS.items():
        setter(command, callback)


def durable_result(command: str, replies: Sequence[Any], wanted: int) -> Durable[Any]:
    """A write's reply and the reply of the ``WAIT wanted ...`` sent after it, as a Durable.

    An error of the write is raised, typed (WAIT's answer then means nothing); an error of WAIT
    itself (say, an ACL user without it) is raised as the client gave it, with a note saying what
    the write replied, since the write was done.
    """
    reply, replicas = replies
    if isinstance(reply, BaseException):
        raise_typed(reply)
        raise reply
    result = RESPONSE_CALLBACKS[command](reply)
    if isinstance(replicas, BaseException):
        replicas.add_note(f"(the WAIT after {command}, which replied {result!r})")
        raise replicas
    return Durable(result, int(replicas), int(replicas) >= wanted)
