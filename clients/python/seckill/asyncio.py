"""The asyncio twin of ``seckill.Seckill``, for ``redis.asyncio`` and ``valkey.asyncio`` clients and
pipelines, and Valkey GLIDE's asyncio client and batches.

On a client, each method returns an awaitable of the typed value. On a pipeline, each method
queues its command at once and returns the pipeline (awaiting it is optional, as in redis-py);
``await Seckill.execute()`` runs the pipeline. ``SplitItem`` and ``Cart`` are the asyncio twins of
``seckill.split.SplitItem`` and ``seckill.cart.Cart``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, overload

from . import commands
from .commands import Key, Lines
from .drivers import async_driver
from .split import _parts, _shares, named, part_index, sum_stock, sum_variants
from .values import (
    ConfirmOutcome,
    DeductResult,
    Durable,
    Hold,
    ItemInfo,
    OrderConfirmation,
    OrderResult,
    OrderState,
    RefundResult,
    ScanRecord,
    SettleOutcome,
    Transfer,
)

__all__ = ["Seckill", "SplitItem", "Cart"]


class Seckill:
    """The SECKILL.* commands on an existing asyncio client, pipeline or batch: ``redis.asyncio``'s,
    ``valkey.asyncio``'s, or Valkey GLIDE's asyncio client (``glide``: ``GlideClient``,
    ``GlideClusterClient``, ``Batch``, ``ClusterBatch``).

    It never opens a connection (see ``seckill.Seckill``). A wait (``wait_replicas``) needs a
    client: a standalone ``redis.asyncio.Redis`` (or valkey-py's), or any GLIDE client; on a
    pipeline, a batch or a redis-py / valkey-py cluster client the method raises a TypeError at
    once, before any await.
    """

    def __init__(self, client: Any) -> None:
        self._driver = async_driver(client)
        self._client = client

    @property
    def client(self) -> Any:
        """The wrapped client, pipeline or batch."""
        return self._client

    @property
    def _queues(self) -> bool:
        """True when this wraps a pipeline or a batch: the methods queue their commands."""
        return bool(self._driver.queues)

    def __repr__(self) -> str:
        return f"seckill.asyncio.Seckill({self._client!r})"

    def _call(self, args: tuple[Any, ...]) -> Any:
        return self._driver.call(args)

    def _write(self, args: tuple[Any, ...], wait_replicas: int | None, wait_timeout_ms: int) -> Any:
        """A write, followed by ``WAIT`` on the same connection when ``wait_replicas`` is given.
        A wait this client cannot make is refused here, not when awaited."""
        if wait_replicas is None:
            return self._call(args)
        return self._driver.call_and_wait(args, commands.wait(wait_replicas, wait_timeout_ms), wait_replicas)

    async def execute(
        self, raise_on_error: bool = True, *, client: Any = None, options: Any = None
    ) -> list[Any] | None:
        """Run the wrapped pipeline or batch: its results in order, with SECKILL.* values and errors
        typed (see ``seckill.Seckill.execute``; a GLIDE batch runs on ``client``, an asyncio
        GLIDE client).
        """
        return await self._driver.execute(raise_on_error, client, options)

    def init(
        self,
        key: Key,
        stock: int | str | Mapping[Key, int | str],
        *,
        limit: int | None = None,
        variant_limits: Mapping[Key, int] | None = None,
        start: int | None = None,
        end: int | None = None,
        stream: Key | None = None,
        maxlen: int | None = None,
        ex: int | None = None,
        px: int | None = None,
        exat: int | None = None,
        pxat: int | None = None,
        replace: bool = False,
    ) -> Awaitable[bool]:
        """SECKILL.INIT: True if the item was created (or replaced), False if it existed."""
        return self._call(
            commands.init(
                key,
                stock,
                limit=limit,
                variant_limits=variant_limits,
                start=start,
                end=end,
                stream=stream,
                maxlen=maxlen,
                ex=ex,
                px=px,
                exat=exat,
                pxat=pxat,
                replace=replace,
            )
        )

    @overload
    def deduct(
        self,
        key: Key,
        user: Key,
        qty: int = 1,
        *,
        request_id: Key | None = None,
        hold: int | None = None,
        hold_until: int | None = None,
        variant: Key | None = None,
        wait_replicas: None = None,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[DeductResult]: ...

    @overload
    def deduct(
        self,
        key: Key,
        user: Key,
        qty: int = 1,
        *,
        request_id: Key | None = None,
        hold: int | None = None,
        hold_until: int | None = None,
        variant: Key | None = None,
        wait_replicas: int,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[Durable[DeductResult]]: ...

    def deduct(
        self,
        key: Key,
        user: Key,
        qty: int = 1,
        *,
        request_id: Key | None = None,
        hold: int | None = None,
        hold_until: int | None = None,
        variant: Key | None = None,
        wait_replicas: int | None = None,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[DeductResult] | Awaitable[Durable[DeductResult]]:
        """SECKILL.DEDUCT: sell (or, with ``hold`` seconds / ``hold_until`` Unix ms, reserve) units;
        with a hold, the result's ``deadline`` is its deadline in Unix ms (see
        ``seckill.Seckill.deduct``); with ``wait_replicas``, a ``Durable`` of the result."""
        return self._write(
            commands.deduct(
                key, user, qty, request_id=request_id, hold=hold, hold_until=hold_until, variant=variant
            ),
            wait_replicas,
            wait_timeout_ms,
        )

    @overload
    def confirm(
        self, key: Key, request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[ConfirmOutcome]: ...

    @overload
    def confirm(
        self, key: Key, request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Awaitable[Durable[ConfirmOutcome]]: ...

    def confirm(
        self, key: Key, request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[ConfirmOutcome] | Awaitable[Durable[ConfirmOutcome]]:
        """SECKILL.CONFIRM: make a pending hold final; refused as ``REFUNDED``, ``LAPSED`` or
        ``UNKNOWN_REQUEST`` (sent with ``DETAIL``); with ``wait_replicas``, a ``Durable``."""
        return self._write(commands.confirm(key, request_id), wait_replicas, wait_timeout_ms)

    def release(self, key: Key, *request_ids: Key) -> Awaitable[int | None]:
        """SECKILL.RELEASE: let pending holds lapse now; how many were released, None if no item."""
        return self._call(commands.release(key, request_ids))

    @overload
    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[RefundResult]: ...

    @overload
    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Awaitable[Durable[RefundResult]]: ...

    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[RefundResult] | Awaitable[Durable[RefundResult]]:
        """SECKILL.REFUND: give a purchase's units back; a ``RefundResult`` (sent with ``DETAIL``,
        see ``seckill.Seckill.refund``); with ``wait_replicas``, a ``Durable`` of that."""
        return self._write(commands.refund(key, request_id), wait_replicas, wait_timeout_ms)

    @overload
    def order(
        self,
        lines: Lines,
        user: Key,
        request_id: Key,
        *,
        hold: int | None = None,
        hold_until: int | None = None,
        wait_replicas: None = None,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[OrderResult]: ...

    @overload
    def order(
        self,
        lines: Lines,
        user: Key,
        request_id: Key,
        *,
        hold: int | None = None,
        hold_until: int | None = None,
        wait_replicas: int,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[Durable[OrderResult]]: ...

    def order(
        self,
        lines: Lines,
        user: Key,
        request_id: Key,
        *,
        hold: int | None = None,
        hold_until: int | None = None,
        wait_replicas: int | None = None,
        wait_timeout_ms: int = 1000,
    ) -> Awaitable[OrderResult] | Awaitable[Durable[OrderResult]]:
        """SECKILL.MDEDUCT: every line of an order (``(key, qty)`` pairs or a mapping, one hash
        tag; ``(key, qty, variant)`` for a variant), or none; an ``OrderResult`` (see ``seckill.Seckill.order``); with
        ``wait_replicas``, a ``Durable`` of it."""
        return self._write(
            commands.order(lines, user, request_id, hold=hold, hold_until=hold_until),
            wait_replicas,
            wait_timeout_ms,
        )

    @overload
    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[OrderConfirmation]: ...

    @overload
    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Awaitable[Durable[OrderConfirmation]]: ...

    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[OrderConfirmation] | Awaitable[Durable[OrderConfirmation]]:
        """SECKILL.MCONFIRM: confirm every line of an order, or none; an ``OrderConfirmation``
        (sent with ``DETAIL``, see ``seckill.Seckill.confirm_order``)."""
        return self._write(commands.confirm_order(keys, request_id), wait_replicas, wait_timeout_ms)

    @overload
    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[list[RefundResult]]: ...

    @overload
    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Awaitable[Durable[list[RefundResult]]]: ...

    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> Awaitable[list[RefundResult]] | Awaitable[Durable[list[RefundResult]]]:
        """SECKILL.MREFUND: give back every line of an order that can be; one ``RefundResult`` per
        line (sent with ``DETAIL``)."""
        return self._write(commands.refund_order(keys, request_id), wait_replicas, wait_timeout_ms)

    def add(
        self, key: Key, qty: int, transfer_id: Key | None = None, *, variant: Key | None = None
    ) -> Awaitable[int | None]:
        """SECKILL.ADD: the new stock, None if no item; with ``transfer_id``, receives moved units once."""
        return self._call(commands.add(key, qty, transfer_id, variant))

    def window(self, key: Key, start: int | None, end: int | None) -> Awaitable[bool | None]:
        """SECKILL.WINDOW: move the sale window (Unix ms; 0 or None = open side); None if no item."""
        return self._call(commands.window(key, start, end))

    def stream(
        self, key: Key, stream_key: Key | None = None, *, maxlen: int | None = None
    ) -> Awaitable[bool | None]:
        """SECKILL.STREAM: set the order stream, or clear it without ``stream_key``; None if no item."""
        return self._call(commands.stream(key, stream_key, maxlen))

    def get(self, key: Key, *, variant: Key | None = None) -> Awaitable[int | None]:
        """SECKILL.GET: the remaining stock, None if no item."""
        return self._call(commands.get(key, variant))

    def bought(self, key: Key, user: Key, *, variant: Key | None = None) -> Awaitable[int | None]:
        """SECKILL.BOUGHT: the units ``user`` holds now, None if no item."""
        return self._call(commands.bought(key, user, variant))

    def holds(self, key: Key, user: Key | None = None) -> Awaitable[list[Hold] | None]:
        """SECKILL.HOLDS: pending holds, earliest deadline first; None if no item."""
        return self._call(commands.holds(key, user))

    def info(self, key: Key, *, variant: Key | None = None) -> Awaitable[ItemInfo | None]:
        """SECKILL.INFO: the item's counters, None if no item."""
        return self._call(commands.info(key, variant))

    def status(self, key: Key, request_id: Key) -> Awaitable[OrderState | None]:
        """SECKILL.STATUS: where the purchase under ``request_id`` stands (status ``UNKNOWN`` if the
        item never saw it), None if no item."""
        return self._call(commands.status(key, request_id))

    def scan(
        self, key: Key, cursor: int = 0, *, count: int | None = None, variant: Key | None = None
    ) -> Awaitable[tuple[int, list[ScanRecord]]]:
        """SECKILL.SCAN: one page from ``cursor`` (0 starts): the next cursor (0 when the scan is
        over) and the page's records; ``(0, [])`` if no item (see ``seckill.Seckill.scan``)."""
        return self._call(commands.scan(key, cursor, count, variant))

    async def scan_iter(
        self, key: Key, count: int | None = None, *, variant: Key | None = None
    ) -> AsyncIterator[ScanRecord]:
        """Every record of the item, following the cursor of ``SECKILL.SCAN`` until it is 0
        (``async for record in sk.scan_iter(key)``; see ``seckill.Seckill.scan_iter``). Needs a
        client, not a pipeline."""
        if self._queues:
            raise TypeError("scan_iter needs a client, not a pipeline: each page's cursor comes from the last")
        args = commands.scan(key, 0, count, variant)
        while True:
            cursor, records = await self._call(args)
            for record in records:
                yield record
            if cursor == 0:
                return
            args = commands.scan(key, cursor, count, variant)

    def take(
        self, key: Key, qty: int, transfer_id: Key, to: Key | None = None, *, variant: Key | None = None
    ) -> Awaitable[int | None]:
        """SECKILL.TAKE: take up to ``qty`` units out of this part (of ``variant``) as transfer
        ``transfer_id``; the units taken (0 if none), None if no item."""
        return self._call(commands.take(key, qty, transfer_id, to, variant))

    def settle(self, key: Key, transfer_id: Key, *, variant: Key | None = None) -> Awaitable[SettleOutcome]:
        """SECKILL.SETTLE: close a transfer given out by ``take`` once its units arrived."""
        return self._call(commands.settle(key, transfer_id, variant))

    def transfers(self, key: Key) -> Awaitable[list[Transfer] | None]:
        """SECKILL.TRANSFERS: the transfers given out and not settled, by id; None if no item."""
        return self._call(commands.transfers(key))

    def variants(self, key: Key) -> Awaitable[dict[str | bytes, int] | None]:
        """SECKILL.VARIANTS: each variant's name and stock, in the order INIT named them ({} for an
        item without variants); None if no item."""
        return self._call(commands.variants(key))


class SplitItem:
    """The asyncio twin of ``seckill.split.SplitItem``: one sale item split over ``parts``.

    ``client`` is a ``seckill.asyncio.Seckill`` or a ``redis.asyncio`` client to wrap (not a
    pipeline). Each method is a coroutine; ``init``, ``stock`` and ``info`` reach the parts
    concurrently.
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
        return f"seckill.asyncio.SplitItem({self._seckill!r}, {list(self._parts)!r})"

    def part_for(self, user: Key) -> int:
        """The index of the part ``user`` buys from (FNV-1a 32 of the user id, modulo the parts)."""
        return part_index(user, len(self._parts))

    def key_for(self, user: Key) -> Key:
        """The key of the part ``user`` buys from."""
        return self._parts[self.part_for(user)]

    async def init(
        self, total_stock: int | Mapping[Key, int | str], limit: int | None = None, **options: Any
    ) -> list[bool]:
        """SECKILL.INIT on every part, ``total_stock`` shared out (a drop's mapping of size to stock
        size by size); one bool per part."""
        shares = _shares(total_stock, len(self._parts))
        return list(
            await asyncio.gather(
                *(self._seckill.init(part, share, limit=limit, **options) for part, share in zip(self._parts, shares))
            )
        )

    async def deduct(
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
        return await self._seckill.deduct(
            self.key_for(user),
            user,
            qty,
            request_id=request_id,
            hold=hold,
            hold_until=hold_until,
            variant=variant,
        )

    async def confirm(self, user: Key, request_id: Key) -> ConfirmOutcome:
        """SECKILL.CONFIRM on the user's part."""
        return await self._seckill.confirm(self.key_for(user), request_id)

    async def refund(self, user: Key, request_id: Key) -> RefundResult:
        """SECKILL.REFUND on the user's part."""
        return await self._seckill.refund(self.key_for(user), request_id)

    async def bought(self, user: Key) -> int | None:
        """SECKILL.BOUGHT on the user's part: all the user holds of the item."""
        return await self._seckill.bought(self.key_for(user), user)

    async def stock(self) -> int | None:
        """The sum of the parts' stocks (a missing part counts 0); None if no part exists."""
        return sum_stock(await asyncio.gather(*(self._seckill.get(part) for part in self._parts)))

    async def info(self) -> list[ItemInfo | None]:
        """Each part's ItemInfo, in order (None for a missing part)."""
        return list(await asyncio.gather(*(self._seckill.info(part) for part in self._parts)))

    async def variants(self) -> dict[str | bytes, int] | None:
        """Each size of a split drop with its stock over all parts; {} for an item without sizes,
        None if no part exists."""
        return sum_variants(await asyncio.gather(*(self._seckill.variants(part) for part in self._parts)))


# cart.py holds both carts; its asyncio one reaches this module's Seckill only when built.
from .cart import AsyncCart as Cart  # noqa: E402
