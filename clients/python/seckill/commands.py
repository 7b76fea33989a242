"""The arguments of each SECKILL.* command, built from Python values (shared by both clients).

Only types are checked here: numbers must be ``int`` and are sent as decimal strings. Every rule
about values (ranges, option combinations, id lengths) is the server's, which answers with an
error that becomes a typed SeckillError.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Optional, Union

from .values import UNLIMITED

__all__ = ["Arg", "Args", "Key", "Lines"]

#: A key, user id, request id or stream key: bytes are sent as they are, str as UTF-8.
Key = Union[str, bytes]
Arg = Union[str, bytes]
Args = tuple[Arg, ...]
#: The lines of an order: ``(key, qty)`` pairs in order, or a mapping of key to quantity.
# (key, qty), or (key, qty, variant) for a variant of an item with variants (None for none).
Lines = Union[Mapping[Key, int], Iterable[Union[tuple[Key, int], tuple[Key, int, Optional[Key]]]]]


def _number(name: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return str(value)


def _key(name: str, value: object) -> Arg:
    if not isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be str or bytes, not {type(value).__name__}")
    return value


def _option(args: list[Arg], keyword: str, name: str, value: int | None) -> None:
    if value is not None:
        args += (keyword, _number(name, value))


def _stock(name: str, stock: object) -> Arg:
    if isinstance(stock, str) and stock.upper() == UNLIMITED:
        return UNLIMITED
    if isinstance(stock, str):
        raise TypeError(f"{name} must be an int or {UNLIMITED!r}, not {stock!r}")
    return _number(name, stock)


def init(
    key: Key,
    stock: int | str | Mapping[Key, int | str],
    *,
    limit: int | None,
    variant_limits: Mapping[Key, int] | None = None,
    start: int | None,
    end: int | None,
    stream: Key | None,
    maxlen: int | None,
    ex: int | None,
    px: int | None,
    exat: int | None,
    pxat: int | None,
    replace: bool,
) -> Args:
    args: list[Arg] = ["SECKILL.INIT", _key("key", key)]
    if isinstance(stock, Mapping):
        # Variants: several stocks under the item's one limit, in the mapping's order.
        args += ("VARIANTS", str(len(stock)))
        for name, units in stock.items():
            args += (_key("variant", name), _stock("a variant's stock", units))
    else:
        args.append(_stock("stock", stock))
    _option(args, "LIMIT", "limit", limit)
    for name, cap in (variant_limits or {}).items():
        args += ("VARIANTLIMIT", _key("variant", name), _number("variant limit", cap))
    _option(args, "START", "start", start)
    _option(args, "END", "end", end)
    if stream is not None:
        args += ("STREAM", _key("stream", stream))
    _option(args, "MAXLEN", "maxlen", maxlen)
    _option(args, "EX", "ex", ex)
    _option(args, "PX", "px", px)
    _option(args, "EXAT", "exat", exat)
    _option(args, "PXAT", "pxat", pxat)
    if replace:
        args.append("REPLACE")
    return tuple(args)


def _variant(args: list[Arg], variant: Key | None) -> list[Arg]:
    if variant is not None:
        args += ("VARIANT", _key("variant", variant))
    return args


def deduct(
    key: Key,
    user: Key,
    qty: int,
    *,
    request_id: Key | None,
    hold: int | None,
    hold_until: int | None,
    variant: Key | None = None,
) -> Args:
    args: list[Arg] = ["SECKILL.DEDUCT", _key("key", key), _key("user", user), _number("qty", qty)]
    if request_id is not None:
        args += ("ID", _key("request_id", request_id))
    _option(args, "HOLD", "hold", hold)
    _option(args, "HOLDUNTIL", "hold_until", hold_until)
    _variant(args, variant)
    if hold is not None or hold_until is not None:
        # A hold's buyer must be told when to pay by: the reply then carries the deadline too.
        args.append("WITHDEADLINE")
    return tuple(args)


def order_lines(lines: Lines) -> list[tuple[Arg, str, Optional[Arg]]]:
    """The ``(key, qty, variant)`` lines of an order, type-checked, in order; a line given as a
    ``(key, qty)`` pair has no variant. An order with no line is refused here: a cluster client
    would have no key to route it by."""
    if isinstance(lines, (str, bytes)):
        raise TypeError("lines must be (key, qty) pairs or a mapping of key to qty, not one key")
    pairs = lines.items() if isinstance(lines, Mapping) else lines
    checked = []
    for line in pairs:
        if isinstance(line, (str, bytes)) or not isinstance(line, Sequence) or len(line) not in (2, 3):
            raise TypeError(f"an order line must be (key, qty) or (key, qty, variant), not {line!r}")
        key, qty, variant = (*line, None) if len(line) == 2 else line
        checked.append(
            (_key("key", key), _number("qty", qty), None if variant is None else _key("variant", variant))
        )
    if not checked:
        raise ValueError("an order needs at least one line")
    return checked


def order_keys(keys: Iterable[Key]) -> list[Arg]:
    """The keys of an order's lines, type-checked, in order (not one key: a str is iterable)."""
    if isinstance(keys, (str, bytes)):
        raise TypeError("keys must be a list of key names, not one key")
    checked = [_key("key", key) for key in keys]
    if not checked:
        raise ValueError("an order needs at least one key")
    return checked


def order(lines: Lines, user: Key, request_id: Key, *, hold: int | None, hold_until: int | None) -> Args:
    checked = order_lines(lines)
    args: list[Arg] = ["SECKILL.MDEDUCT", str(len(checked))]
    for key, qty, _ in checked:
        args += (key, qty)
    args += (_key("user", user), _key("request_id", request_id))
    _option(args, "HOLD", "hold", hold)
    _option(args, "HOLDUNTIL", "hold_until", hold_until)
    for number, (_, _, variant) in enumerate(checked, 1):
        if variant is not None:
            args += ("VARIANT", str(number), variant)
    if hold is not None or hold_until is not None:
        # As with deduct: the buyer is told when to pay by, in the same reply.
        args.append("WITHDEADLINE")
    return tuple(args)


def confirm_order(keys: Iterable[Key], request_id: Key) -> Args:
    checked = order_keys(keys)
    # DETAIL: a refused payment says which line was refunded, lapsed or unknown.
    return ("SECKILL.MCONFIRM", str(len(checked)), *checked, _key("request_id", request_id), "DETAIL")


def refund_order(keys: Iterable[Key], request_id: Key) -> Args:
    checked = order_keys(keys)
    return ("SECKILL.MREFUND", str(len(checked)), *checked, _key("request_id", request_id), "DETAIL")


# The commands of an order name their keys after a count (numlines, numkeys).
_KEYS_AFTER_COUNT = frozenset({"SECKILL.MDEDUCT", "SECKILL.MCONFIRM", "SECKILL.MREFUND"})


def routing_key(args: Args) -> Arg:
    """The key a cluster must route a built command by: its item key, the first argument, or for
    the commands of an order, whose first argument is a count, the key of the first line."""
    return args[2] if args[0] in _KEYS_AFTER_COUNT else args[1]


def is_routed_by_first_argument(args: Args) -> bool:
    """True when a client that routes by the first argument (GLIDE, with any command it does not
    know) finds the key there; False for the commands of an order, which it would route by
    their count."""
    return args[0] not in _KEYS_AFTER_COUNT


def wait(replicas: int, timeout_ms: int) -> Args:
    """WAIT, sent right after a write on its connection (a client-side check: ``WAIT n 0`` would
    block for ever, and a negative count would always be met)."""
    replicas_arg = _number("wait_replicas", replicas)
    timeout_arg = _number("wait_timeout_ms", timeout_ms)
    if replicas < 0:
        raise ValueError(f"wait_replicas must be 0 or more, not {replicas}")
    if timeout_ms < 1:
        raise ValueError(f"wait_timeout_ms must be 1 or more (WAIT with 0 blocks for ever), not {timeout_ms}")
    return ("WAIT", replicas_arg, timeout_arg)


def status(key: Key, request_id: Key) -> Args:
    return ("SECKILL.STATUS", _key("key", key), _key("request_id", request_id))


def confirm(key: Key, request_id: Key) -> Args:
    # DETAIL: a refused payment tells refunded, lapsed and unknown apart, in the same round trip.
    return ("SECKILL.CONFIRM", _key("key", key), _key("request_id", request_id), "DETAIL")


def release(key: Key, request_ids: tuple[Key, ...]) -> Args:
    return ("SECKILL.RELEASE", _key("key", key), *(_key("request_id", r) for r in request_ids))


def refund(key: Key, request_id: Key) -> Args:
    # DETAIL: nothing given back tells refunded before, lapsed and unknown apart.
    return ("SECKILL.REFUND", _key("key", key), _key("request_id", request_id), "DETAIL")


def add(key: Key, qty: int, transfer_id: Key | None, variant: Key | None = None) -> Args:
    args: list[Arg] = ["SECKILL.ADD", _key("key", key), _number("qty", qty)]
    if transfer_id is not None:
        args += ("ID", _key("transfer_id", transfer_id))
    return tuple(_variant(args, variant))


def take(key: Key, qty: int, transfer_id: Key, to: Key | None, variant: Key | None = None) -> Args:
    args: list[Arg] = ["SECKILL.TAKE", _key("key", key), _number("qty", qty), "ID", _key("transfer_id", transfer_id)]
    if to is not None:
        args += ("TO", _key("to", to))
    return tuple(_variant(args, variant))


def settle(key: Key, transfer_id: Key, variant: Key | None = None) -> Args:
    return tuple(_variant(["SECKILL.SETTLE", _key("key", key), _key("transfer_id", transfer_id)], variant))


def transfers(key: Key) -> Args:
    return ("SECKILL.TRANSFERS", _key("key", key))


def variants(key: Key) -> Args:
    return ("SECKILL.VARIANTS", _key("key", key))


def window(key: Key, start: int | None, end: int | None) -> Args:
    return (
        "SECKILL.WINDOW",
        _key("key", key),
        _number("start", 0 if start is None else start),
        _number("end", 0 if end is None else end),
    )


def stream(key: Key, stream_key: Key | None, maxlen: int | None) -> Args:
    if stream_key is None:
        if maxlen is not None:
            raise ValueError("maxlen needs a stream_key (without one, SECKILL.STREAM clears the stream)")
        return ("SECKILL.STREAM", _key("key", key))
    args: list[Arg] = ["SECKILL.STREAM", _key("key", key), _key("stream_key", stream_key)]
    _option(args, "MAXLEN", "maxlen", maxlen)
    return tuple(args)


def get(key: Key, variant: Key | None = None) -> Args:
    return tuple(_variant(["SECKILL.GET", _key("key", key)], variant))


def bought(key: Key, user: Key, variant: Key | None = None) -> Args:
    return tuple(_variant(["SECKILL.BOUGHT", _key("key", key), _key("user", user)], variant))


def holds(key: Key, user: Key | None) -> Args:
    if user is None:
        return ("SECKILL.HOLDS", _key("key", key))
    return ("SECKILL.HOLDS", _key("key", key), _key("user", user))


def info(key: Key, variant: Key | None = None) -> Args:
    return tuple(_variant(["SECKILL.INFO", _key("key", key)], variant))


def scan(key: Key, cursor: int, count: int | None, variant: Key | None = None) -> Args:
    args: list[Arg] = ["SECKILL.SCAN", _key("key", key), _number("cursor", cursor)]
    _option(args, "COUNT", "count", count)
    return tuple(_variant(args, variant))
