"""Split items: one sale item spread over several parts, so that its traffic spans several shards.

Each part is an ordinary item under its own key; put the parts on different shards (cluster
masters) by picking their names. A user always reaches the same part, chosen by the FNV-1a hash
of the user id, so the per-user limit stays exact. The Node and Rust clients pick the very same
part for a user. Moving stock between parts (``take``, ``add(..., transfer_id=)``, ``settle``)
is left to ``seckill-rebalancer`` or to the client's own methods.

``SplitItem`` is the sync helper; ``seckill.asyncio.SplitItem`` is its asyncio twin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import Seckill
from .commands import Key
from .values import UNLIMITED_STOCK, ConfirmOutcome, DeductResult, ItemInfo, RefundResult

__all__ = [
    "SplitItem",
    "fnv1a32",
    "named",
    "part_index",
    "split_stock",
    "split_variants",
    "sum_stock",
    "sum_variants",
]

FNV32_OFFSET_BASIS = 2166136261
FNV32_PRIME = 16777619


def fnv1a32(data: str | bytes) -> int:
    """The 32-bit FNV-1a hash of ``data`` (a ``str`` is hashed as its UTF-8 bytes)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected str or bytes, not {type(data).__name__}")
    value = FNV32_OFFSET_BASIS
    for byte in bytes(data):
        value = ((value ^ byte) * FNV32_PRIME) & 0xFFFFFFFF
    return value


def named(item: Key, n: int) -> list[Key]:
    """The default part names of ``item``: ``item:part:0`` to ``item:part:{n-1}``.

    Whether they land on different cluster masters depends on their slots: check, or pick names.
    """
    count = _count(n)
    if isinstance(item, bytes):
        return [item + b":part:" + str(i).encode() for i in range(count)]
    if not isinstance(item, str):
        raise TypeError(f"item must be str or bytes, not {type(item).__name__}")
    return [f"{item}:part:{i}" for i in range(count)]


def part_index(user: Key, n: int) -> int:
    """The part (0 to n-1) that ``user`` always buys from: ``fnv1a32(user) % n``."""
    if not isinstance(user, (str, bytes)):
        raise TypeError(f"user must be str or bytes, not {type(user).__name__}")
    return fnv1a32(user) % n


def split_stock(total_stock: int, n: int) -> list[int]:
    """``total_stock`` shared over ``n`` parts: ``total // n`` each, one more for the first
    ``total % n`` parts."""
    if isinstance(total_stock, bool) or not isinstance(total_stock, int):
        raise TypeError(f"total_stock must be an int, not {type(total_stock).__name__}")
    if total_stock < 0:
        raise ValueError("total_stock must not be negative")
    share, rest = divmod(total_stock, n)
    return [share + (1 if i < rest else 0) for i in range(n)]


def sum_stock(stocks: Sequence[int | None]) -> int | None:
    """The stock of a split item from its parts' stocks: missing parts (None) count 0, None if
    every part is missing, ``UNLIMITED_STOCK`` if a part is unlimited."""
    present = [stock for stock in stocks if stock is not None]
    if not present:
        return None
    if UNLIMITED_STOCK in present:
        return UNLIMITED_STOCK
    return sum(present)


def split_variants(variants: Mapping[Key, int | str], n: int) -> list[dict[Key, int | str]]:
    """A drop's sizes shared over ``n`` parts, size by size as ``split_stock`` shares one stock;
    an unlimited size (``UNLIMITED``) is unlimited in every part."""
    if isinstance(variants, (str, bytes)) or not isinstance(variants, Mapping):
        raise TypeError(f"variants must be a mapping of name to stock, not {type(variants).__name__}")
    count = _count(n)
    parts: list[dict[Key, int | str]] = [{} for _ in range(count)]
    for name, stock in variants.items():
        shares = [stock] * count if isinstance(stock, str) else split_stock(stock, count)
        for part, share in zip(parts, shares):
            part[name] = share
    return parts


def sum_variants(listed: Sequence[Mapping[Any, int] | None]) -> dict[Any, int] | None:
    """Each size's stock over a split drop's parts (``VARIANTS`` of each part): missing parts
    count 0, None if every part is missing, ``UNLIMITED_STOCK`` for a size unlimited in a part."""
    present = [variants for variants in listed if variants is not None]
    if not present:
        return None
    total: dict[Any, int] = {}
    for variants in present:
        for name, stock in variants.items():
            if UNLIMITED_STOCK in (stock, total.get(name)):
                total[name] = UNLIMITED_STOCK
            else:
                total[name] = total.get(name, 0) + stock
    return total


def _shares(stock: int | Mapping[Key, int | str], n: int) -> Sequence[int | Mapping[Key, int | str]]:
    """Each part's stock: ``stock`` shared out, size by size for a drop."""
    if isinstance(stock, Mapping):
        return split_variants(stock, n)
    return split_stock(stock, n)


def _count(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"the number of parts must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError("a split item needs at least one part")
    return n


def _parts(parts: Sequence[Key]) -> tuple[Key, ...]:
    if isinstance(parts, (str, bytes)):
        raise TypeError("parts must be a list of key names, not one key")
    keys = tuple(parts)
    _count(len(keys))
    for part in keys:
        if not isinstance(part, (str, bytes)):
            raise TypeError(f"a part name must be str or bytes, not {type(part).__name__}")
    if len(set(keys)) != len(keys):
        raise ValueError("part names must be distinct")
    return keys


class SplitItem:
    """One sale item split over the items ``parts`` (key names, ideally on different shards).

    ``client`` is a ``seckill.Seckill`` or a client it takes (``redis.Redis``,
    ``redis.RedisCluster``, valkey-py's, a GLIDE sync client) to wrap; not a pipeline, since
    ``stock()`` and ``info()`` read every part. User ``user``'s calls always go to part ``part_for(user)``.
    """

    named = staticmethod(named)

    def __init__(self, client: Any, parts: Sequence[Key]) -> None:
        seckill = client if isinstance(client, Seckill) else Seckill(client)
        if seckill._queues:
            raise TypeError("a SplitItem needs a client, not a pipeline")
        self._seckill = seckill
        self._parts = _parts(parts)

    @property
    def seckill(self) -> Seckill:
        """The client the parts are reached through."""
        return self._seckill

    @property
    def parts(self) -> tuple[Key, ...]:
        """The part key names, in order."""
        return self._parts

    def __repr__(self) -> str:
        return f"SplitItem({self._seckill!r}, {list(self._parts)!r})"

    def part_for(self, user: Key) -> int:
        """The index of the part ``user`` buys from (FNV-1a 32 of the user id, modulo the parts)."""
        return part_index(user, len(self._parts))

    def key_for(self, user: Key) -> Key:
        """The key of the part ``user`` buys from."""
        return self._parts[self.part_for(user)]

    def init(self, total_stock: int | Mapping[Key, int | str], limit: int | None = None, **options: Any) -> list[bool]:
        """SECKILL.INIT on every part, ``total_stock`` shared out (``split_stock``), or for a drop a
        mapping of size to stock shared size by size (``split_variants``); the other options are
        ``Seckill.init``'s, the same for every part. One bool per part."""
        shares = _shares(total_stock, len(self._parts))
        return [self._seckill.init(part, share, limit=limit, **options) for part, share in zip(self._parts, shares)]

    def deduct(
        self,
        user: Key,
        qty: int = 1,
        *,
        request_id: Key | None = None,
        hold: int | None = None,
        hold_until: int | None = None,
        variant: Key | None = None,
    ) -> DeductResult:
        """SECKILL.DEDUCT on the user's part (of the size ``variant`` of a drop); ``stock`` in the
        result is that part's stock (and ``deadline`` the hold's, with a hold)."""
        return self._seckill.deduct(
            self.key_for(user),
            user,
            qty,
            request_id=request_id,
            hold=hold,
            hold_until=hold_until,
            variant=variant,
        )

    def confirm(self, user: Key, request_id: Key) -> ConfirmOutcome:
        """SECKILL.CONFIRM on the user's part."""
        return self._seckill.confirm(self.key_for(user), request_id)

    def refund(self, user: Key, request_id: Key) -> RefundResult:
        """SECKILL.REFUND on the user's part."""
        return self._seckill.refund(self.key_for(user), request_id)

    def bought(self, user: Key) -> int | None:
        """SECKILL.BOUGHT on the user's part: all the user holds of the item."""
        return self._seckill.bought(self.key_for(user), user)

    def stock(self) -> int | None:
        """The sum of the parts' stocks (a missing part counts 0); None if no part exists."""
        return sum_stock([self._seckill.get(part) for part in self._parts])

    def info(self) -> list[ItemInfo | None]:
        """Each part's ItemInfo, in order (None for a missing part)."""
        return [self._seckill.info(part) for part in self._parts]

    def variants(self) -> dict[str | bytes, int] | None:
        """Each size of a split drop with its stock over all parts (``sum_variants``); {} for an
        item without sizes, None if no part exists."""
        return sum_variants([self._seckill.variants(part) for part in self._parts])
