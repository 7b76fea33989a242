"""Python client for seckill, the Redis module for flash-sale inventory.

``Seckill(r)`` wraps a ``redis.Redis``, a ``redis.RedisCluster`` or a pipeline of either, valkey-py's
twins of those, or a Valkey GLIDE sync client or batch; the asyncio twin is
``seckill.asyncio.Seckill``. Every SECKILL.* command is a method that returns a
typed value and raises a typed ``SeckillError`` subclass. ``deduct``, ``confirm`` and ``refund``
(and ``order``, ``confirm_order`` and ``refund_order``, their twins for an order of several items
on one shard) take ``wait_replicas=`` to learn, in the same round trip, how many replicas have
the write. ``seckill.cart.Cart`` places an order whose items live on different shards.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from . import commands
from .commands import Key, Lines
from .drivers import sync_driver
from .errors import (
    ConnectionLostError,
    ErrorKind,
    InvalidArgumentError,
    ItemFullError,
    NoPermissionError,
    OrderStreamError,
    RequestIdConflictError,
    SeckillError,
    UnavailableError,
    WrongTypeError,
)
from .values import (
    UNLIMITED,
    UNLIMITED_STOCK,
    BuyerRecord,
    ConfirmOutcome,
    DeductResult,
    Durable,
    Hold,
    ItemInfo,
    OrderConfirmation,
    OrderResult,
    OrderState,
    Outcome,
    RefundOutcome,
    RefundResult,
    RequestRecord,
    RequestStatus,
    ScanRecord,
    SettleOutcome,
    Transfer,
)

__all__ = [
    "Seckill",
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
    "Cart",
    "CartPlacement",
    "CartPayment",
    "Durable",
    "Hold",
    "Transfer",
    "ItemInfo",
    "RequestStatus",
    "OrderState",
    "BuyerRecord",
    "RequestRecord",
    "ScanRecord",
    "SplitItem",
    "fnv1a32",
    "ErrorKind",
    "SeckillError",
    "RequestIdConflictError",
    "OrderStreamError",
    "ItemFullError",
    "WrongTypeError",
    "NoPermissionError",
    "InvalidArgumentError",
    "UnavailableError",
    "ConnectionLostError",
]


class Seckill:
    """The SECKILL.* commands on an existing client, pipeline or batch: redis-py's or valkey-py's
    (``Redis``/``Valkey``, their cluster clients and pipelines), or Valkey GLIDE's sync client
    (``glide_sync``: ``GlideClient``, ``GlideClusterClient``, ``Batch``, ``ClusterBatch``).

    It never opens a connection: every call goes through the client, so its connection pool,
    retries, protocol and cluster routing apply as they are.

    On a redis-py or valkey-py client, wrapping registers response callbacks for the SECKILL.*
    commands on it (a pipeline shares them with the client it came from), so the client itself
    decodes the replies, in pipelines and transactions too: after that,
    ``client.execute_command("SECKILL.INFO", key)`` returns an ``ItemInfo`` as well. GLIDE has no
    such hook: the methods decode its replies.

    On a pipeline or a batch, each method queues its command and returns the pipeline; run it with
    ``Seckill.execute()`` (a GLIDE batch: ``execute(client=...)``) to get the typed values and
    typed errors in order (a redis-py pipeline's own ``execute()`` gives the same typed values,
    but leaves error replies as plain ``ResponseError``).

    ``deduct``, ``confirm`` and ``refund`` take ``wait_replicas`` (and ``wait_timeout_ms``, 1000 by
    default): the command and a ``WAIT`` go together on one connection, and the call returns a
    ``Durable``. That needs a client: a standalone redis-py or valkey-py one (Sentinel's
    included), or any GLIDE client (on a cluster, the two go to the item key's master). A pipeline,
    a batch or a redis-py / valkey-py cluster client refuses it with a TypeError.
    """

    def __init__(self, client: Any) -> None:
        self._driver = sync_driver(client)
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
        return f"Seckill({self._client!r})"

    def _call(self, args: tuple[Any, ...]) -> Any:
        return self._driver.call(args)

    def _write(self, args: tuple[Any, ...], wait_replicas: int | None, wait_timeout_ms: int) -> Any:
        """A write, followed by ``WAIT`` on the same connection when ``wait_replicas`` is given."""
        if wait_replicas is None:
            return self._call(args)
        return self._driver.call_and_wait(args, commands.wait(wait_replicas, wait_timeout_ms), wait_replicas)

    def execute(self, raise_on_error: bool = True, *, client: Any = None, options: Any = None) -> list[Any] | None:
        """Run the wrapped pipeline or batch: its results in order, with SECKILL.* values and errors
        typed.

        With ``raise_on_error`` (the default) the first error is raised, as redis-py does. A GLIDE
        batch runs on ``client`` (a sync GLIDE client), with GLIDE's batch ``options`` if given;
        it returns None when a transaction's WATCHed keys changed.
        """
        return self._driver.execute(raise_on_error, client, options)

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
    ) -> bool:
        """SECKILL.INIT: True if the item was created (or replaced), False if it existed.

        ``stock`` is an int or ``UNLIMITED``; ``start``/``end``/``pxat`` are Unix ms. A mapping of
        variant name to stock makes an item with variants (a drop's sizes): ``limit`` caps a
        buyer's units across all of them, ``variant_limits`` gives a variant a cap of its own, and
        ``deduct``, ``add``, ``scan`` name the variant with ``variant=`` (``get``, ``bought`` and
        ``info`` report the whole item without it).
        """
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
    ) -> DeductResult: ...

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
    ) -> Durable[DeductResult]: ...

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
    ) -> DeductResult | Durable[DeductResult]:
        """SECKILL.DEDUCT: sell (or, with ``hold`` seconds / ``hold_until`` Unix ms, reserve) units.

        With a hold, the result's ``deadline`` is the hold's deadline in Unix ms (sent with
        ``WITHDEADLINE``); without one it is None. A retried ``request_id`` gets the very same
        result as its first call and changes nothing (a hold confirmed since has no deadline
        any more). With ``wait_replicas``, a ``Durable`` of the result (see ``Seckill``).
        """
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
    ) -> ConfirmOutcome: ...

    @overload
    def confirm(
        self, key: Key, request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Durable[ConfirmOutcome]: ...

    def confirm(
        self, key: Key, request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> ConfirmOutcome | Durable[ConfirmOutcome]:
        """SECKILL.CONFIRM: make a pending hold final. Sent with ``DETAIL``: a hold that cannot be
        confirmed answers ``REFUNDED``, ``LAPSED`` or ``UNKNOWN_REQUEST``, never ``CANCELLED``.
        With ``wait_replicas``, a ``Durable``."""
        return self._write(commands.confirm(key, request_id), wait_replicas, wait_timeout_ms)

    def release(self, key: Key, *request_ids: Key) -> int | None:
        """SECKILL.RELEASE: let pending holds lapse now; how many were released, None if no item."""
        return self._call(commands.release(key, request_ids))

    @overload
    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> RefundResult: ...

    @overload
    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Durable[RefundResult]: ...

    def refund(
        self, key: Key, request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> RefundResult | Durable[RefundResult]:
        """SECKILL.REFUND: give a purchase's units back. Sent with ``DETAIL``: a ``RefundResult``
        whose outcome is ``REFUNDED`` (``units`` is how many went back), ``ALREADY_REFUNDED``,
        ``LAPSED``, ``UNKNOWN_REQUEST`` or ``NO_ITEM``. With ``wait_replicas``, a ``Durable`` of
        that."""
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
    ) -> OrderResult: ...

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
    ) -> Durable[OrderResult]: ...

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
    ) -> OrderResult | Durable[OrderResult]:
        """SECKILL.MDEDUCT: buy (or, with ``hold`` seconds / ``hold_until`` Unix ms, reserve) every
        line of an order, or none. ``lines`` is ``(key, qty)`` pairs in order, or a mapping; a line
        of an item with variants is ``(key, qty, variant)`` (``VARIANT line name``), judged under
        the item's limit across its variants. In a cluster the keys must share a slot (one hash
        tag).

        An ``OrderResult``: ``taken``, one result per line (the stock left, the code of a line
        that refused, None for a line that would have been taken), and with a hold its
        ``deadline`` (sent with ``WITHDEADLINE``). A retried ``request_id`` gets the first reply
        and changes nothing. With ``wait_replicas``, a ``Durable`` of the result.
        """
        return self._write(
            commands.order(lines, user, request_id, hold=hold, hold_until=hold_until),
            wait_replicas,
            wait_timeout_ms,
        )

    @overload
    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> OrderConfirmation: ...

    @overload
    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Durable[OrderConfirmation]: ...

    def confirm_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> OrderConfirmation | Durable[OrderConfirmation]:
        """SECKILL.MCONFIRM: confirm every line of an order placed with ``order``, or none. Sent
        with ``DETAIL``: an ``OrderConfirmation`` whose lines are ``CONFIRMED`` or
        ``ALREADY_FINAL`` when ``confirmed``; else the refusing lines say ``REFUNDED``,
        ``LAPSED``, ``UNKNOWN_REQUEST`` or ``NO_ITEM`` and the others are None. With
        ``wait_replicas``, a ``Durable``."""
        return self._write(commands.confirm_order(keys, request_id), wait_replicas, wait_timeout_ms)

    @overload
    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: None = None, wait_timeout_ms: int = 1000
    ) -> list[RefundResult]: ...

    @overload
    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int, wait_timeout_ms: int = 1000
    ) -> Durable[list[RefundResult]]: ...

    def refund_order(
        self, keys: Sequence[Key], request_id: Key, *, wait_replicas: int | None = None, wait_timeout_ms: int = 1000
    ) -> list[RefundResult] | Durable[list[RefundResult]]:
        """SECKILL.MREFUND: give back every line of an order that can be. Sent with ``DETAIL``: one
        ``RefundResult`` per line, in order, as ``refund`` returns it. With ``wait_replicas``, a
        ``Durable`` of the list."""
        return self._write(commands.refund_order(keys, request_id), wait_replicas, wait_timeout_ms)

    def add(
        self, key: Key, qty: int, transfer_id: Key | None = None, *, variant: Key | None = None
    ) -> int | None:
        """SECKILL.ADD: the new stock, None if no item.

        With ``transfer_id``, receives the units a ``take`` moved out of another part, once: a
        retry adds nothing and replies what the first call did.
        """
        return self._call(commands.add(key, qty, transfer_id, variant))

    def window(self, key: Key, start: int | None, end: int | None) -> bool | None:
        """SECKILL.WINDOW: move the sale window (Unix ms; 0 or None = open side); None if no item."""
        return self._call(commands.window(key, start, end))

    def stream(self, key: Key, stream_key: Key | None = None, *, maxlen: int | None = None) -> bool | None:
        """SECKILL.STREAM: set the order stream, or clear it without ``stream_key``; None if no item."""
        return self._call(commands.stream(key, stream_key, maxlen))

    def get(self, key: Key, *, variant: Key | None = None) -> int | None:
        """SECKILL.GET: the remaining stock, None if no item."""
        return self._call(commands.get(key, variant))

    def bought(self, key: Key, user: Key, *, variant: Key | None = None) -> int | None:
        """SECKILL.BOUGHT: the units ``user`` holds now, None if no item."""
        return self._call(commands.bought(key, user, variant))

    def holds(self, key: Key, user: Key | None = None) -> list[Hold] | None:
        """SECKILL.HOLDS: pending holds, earliest deadline first; None if no item."""
        return self._call(commands.holds(key, user))

    def info(self, key: Key, *, variant: Key | None = None) -> ItemInfo | None:
        """SECKILL.INFO: the item's counters, None if no item."""
        return self._call(commands.info(key, variant))

    def status(self, key: Key, request_id: Key) -> OrderState | None:
        """SECKILL.STATUS: where the purchase under ``request_id`` stands (status ``UNKNOWN`` if the
        item never saw it), None if no item."""
        return self._call(commands.status(key, request_id))

    def scan(
        self, key: Key, cursor: int = 0, *, count: int | None = None, variant: Key | None = None
    ) -> tuple[int, list[ScanRecord]]:
        """SECKILL.SCAN: one page of the item's records from ``cursor`` (0 starts a scan): the next
        cursor (0 when the scan is over) and at most ``count`` records (10 by default, 10,000 at
        most). A missing item answers ``(0, [])``; a made-up or stale cursor raises
        ``InvalidArgumentError``."""
        return self._call(commands.scan(key, cursor, count, variant))

    def scan_iter(self, key: Key, count: int | None = None, *, variant: Key | None = None) -> Iterator[ScanRecord]:
        """Every record of the item (``BuyerRecord`` and ``RequestRecord``), following the cursor of
        ``SECKILL.SCAN`` until it is 0, ``count`` records a call. Every record that existed when the
        scan started is yielded once, however the item changes meanwhile; records written during
        the scan come too, at its end. Needs a client, not a pipeline."""
        if self._queues:
            raise TypeError("scan_iter needs a client, not a pipeline: each page's cursor comes from the last")
        args = commands.scan(key, 0, count, variant)  # checks the arguments before the first call
        cursor = 0
        while True:
            cursor, records = self._call(args)
            yield from records
            if cursor == 0:
                return
            args = commands.scan(key, cursor, count, variant)

    def take(
        self, key: Key, qty: int, transfer_id: Key, to: Key | None = None, *, variant: Key | None = None
    ) -> int | None:
        """SECKILL.TAKE: take up to ``qty`` units of the stock in hand out of this part (of the
        ``variant`` named, on an item with variants), recorded as an open transfer ``transfer_id``
        (to ``to``, if given); the units taken (0 if none), None if no item. A retry with the same
        id and ``qty`` takes nothing more and replies the same.
        """
        return self._call(commands.take(key, qty, transfer_id, to, variant))

    def settle(self, key: Key, transfer_id: Key, *, variant: Key | None = None) -> SettleOutcome:
        """SECKILL.SETTLE: close a transfer given out by ``take`` once its units arrived."""
        return self._call(commands.settle(key, transfer_id, variant))

    def transfers(self, key: Key) -> list[Transfer] | None:
        """SECKILL.TRANSFERS: the transfers given out and not settled, by id; None if no item."""
        return self._call(commands.transfers(key))

    def variants(self, key: Key) -> dict[str | bytes, int] | None:
        """SECKILL.VARIANTS: each variant's name and stock, in the order INIT named them ({} for an
        item without variants); None if no item."""
        return self._call(commands.variants(key))


# split.py and cart.py build on Seckill, so they come last.
from .split import SplitItem, fnv1a32  # noqa: E402
from .cart import Cart, CartPayment, CartPlacement  # noqa: E402
