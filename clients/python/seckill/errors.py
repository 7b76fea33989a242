"""Typed errors of the SECKILL.* commands, decided from the server's error reply in one place."""

from __future__ import annotations

import enum
from typing import ClassVar

from redis import exceptions as redis_errors

__all__ = [
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
    "error_kind",
    "typed_error",
    "raise_typed",
]


class ErrorKind(enum.Enum):
    REQUEST_ID_CONFLICT = "REQUEST_ID_CONFLICT"
    ORDER_STREAM = "ORDER_STREAM"
    ITEM_FULL = "ITEM_FULL"
    WRONG_TYPE = "WRONG_TYPE"
    NO_PERMISSION = "NO_PERMISSION"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    UNAVAILABLE = "UNAVAILABLE"


class SeckillError(redis_errors.ResponseError):
    """An error reply to a SECKILL.* command.

    ``code`` is the reply's leading word (``"ERR"``, ``"WRONGTYPE"``, ...), ``message`` the rest
    of the text; ``str(error)`` is the message.
    """

    kind: ClassVar[ErrorKind]

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def retryable(self) -> bool:
        """True when the same call may succeed if sent again: a ``TRYAGAIN`` of the order stream,
        or any ``UnavailableError``."""
        return False

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def __reduce__(self) -> tuple[type[SeckillError], tuple[str, ...]]:
        return (type(self), (self.code, self.message))


class RequestIdConflictError(SeckillError):
    """The request id was already used by another user or for another quantity, or the transfer
    id for another quantity or the other direction (a ``TAKE`` id reused by ``ADD ... ID``, or
    the reverse)."""

    kind = ErrorKind.REQUEST_ID_CONFLICT


class OrderStreamError(SeckillError):
    """The item's order stream could not take the event; nothing was changed."""

    kind = ErrorKind.ORDER_STREAM

    @property
    def retryable(self) -> bool:
        return self.code == "TRYAGAIN"


class ItemFullError(SeckillError):
    """The item's ledger cannot record more purchases, or the item more transfers (10,000)."""

    kind = ErrorKind.ITEM_FULL


class WrongTypeError(SeckillError):
    """The item key holds another type."""

    kind = ErrorKind.WRONG_TYPE


class NoPermissionError(SeckillError, redis_errors.NoPermissionError):
    """The ACL user may not do this (also a ``redis.exceptions.NoPermissionError``)."""

    kind = ErrorKind.NO_PERMISSION


class InvalidArgumentError(SeckillError):
    """Any other error of a SECKILL command: syntax, ranges, ids, windows, arity."""

    kind = ErrorKind.INVALID_ARGUMENT


class UnavailableError(SeckillError):
    """The server could not take the write now; send the same call again, to the current master.

    ``code`` says why: ``NOREPLICAS`` (a master with ``min-replicas-to-write`` has too few
    replicas), ``READONLY`` (the call reached a replica, e.g. after a failover), ``MASTERDOWN``
    or ``LOADING``. A ``ConnectionLostError`` is one too. Nothing was changed, except after a
    lost connection, where the write may have happened: with a request id (and for ``confirm``
    and ``refund``) sending it again is safe.
    """

    kind = ErrorKind.UNAVAILABLE

    @property
    def retryable(self) -> bool:
        return True


class ConnectionLostError(UnavailableError, redis_errors.ConnectionError):
    """The connection failed before the reply came (also a ``redis.exceptions.ConnectionError``,
    raised from redis-py's own): the write may or may not have happened. ``code`` is ``""``,
    as there was no reply."""

    def __init__(self, message: str) -> None:
        super().__init__("", message)

    def __reduce__(self) -> tuple[type[SeckillError], tuple[str, ...]]:
        return (type(self), (self.message,))


_CLASS_BY_KIND: dict[ErrorKind, type[SeckillError]] = {
    cls.kind: cls
    for cls in (
        RequestIdConflictError,
        OrderStreamError,
        ItemFullError,
        WrongTypeError,
        NoPermissionError,
        InvalidArgumentError,
        UnavailableError,
    )
}

# Replies saying the server cannot take a write now, whatever the command.
_UNAVAILABLE_CODES = frozenset({"NOREPLICAS", "READONLY", "MASTERDOWN", "LOADING"})

# Connection errors that are not about this call's connection failing: a retry will not help.
_NOT_LOST = (redis_errors.AuthenticationError, redis_errors.AuthorizationError)


def error_kind(code: str, message: str) -> ErrorKind | None:
    """The kind of a SECKILL.* error reply, or None for an error that is not about the command
    (OOM, a cluster redirection, ...) and stays redis-py's own exception."""
    if "request id was already used" in message or "transfer id was already used" in message:
        return ErrorKind.REQUEST_ID_CONFLICT
    if "the item's order stream" in message:
        return ErrorKind.ORDER_STREAM
    if "sale item is full" in message:
        return ErrorKind.ITEM_FULL
    if code == "WRONGTYPE":
        return ErrorKind.WRONG_TYPE
    if code == "NOPERM":
        return ErrorKind.NO_PERMISSION
    if code in _UNAVAILABLE_CODES:
        return ErrorKind.UNAVAILABLE
    if code == "ERR":
        return ErrorKind.INVALID_ARGUMENT
    return None


# redis-py strips the code of these replies and says it with the exception's class instead.
_CODE_BY_CLASS: tuple[tuple[type[BaseException], str], ...] = (
    (redis_errors.NoPermissionError, "NOPERM"),
    (redis_errors.TryAgainError, "TRYAGAIN"),
    (redis_errors.ClusterCrossSlotError, "CROSSSLOT"),
    (redis_errors.MovedError, "MOVED"),
    (redis_errors.AskError, "ASK"),
    (redis_errors.MasterDownError, "MASTERDOWN"),
    (redis_errors.ClusterDownError, "CLUSTERDOWN"),
    (redis_errors.OutOfMemoryError, "OOM"),
    (redis_errors.ReadOnlyError, "READONLY"),
    (redis_errors.ExecAbortError, "EXECABORT"),
    (redis_errors.NoScriptError, "NOSCRIPT"),
    (redis_errors.BusyLoadingError, "LOADING"),  # a ConnectionError, not a ResponseError
)

# Codes that redis-py leaves at the start of a plain ResponseError's text (it strips only the
# ones it has a class for, and "ERR"). An "ERR" text may start with a capitalised word of its
# own ("START and END must be ..."), so only these words are read as codes.
_CODES_KEPT_IN_TEXT = frozenset(
    {
        "WRONGTYPE",
        "TRYAGAIN",
        "CROSSSLOT",
        "NOPERM",
        "OOM",
        "READONLY",
        "BUSY",
        "MISCONF",
        "NOREPLICAS",
        "MASTERDOWN",
        "CLUSTERDOWN",
        "LOADING",
        "EXECABORT",
    }
)


def _code_and_message(error: redis_errors.RedisError) -> tuple[str, str]:
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    for cls, code in _CODE_BY_CLASS:
        if isinstance(error, cls):
            return code, text
    word, _, rest = text.partition(" ")
    if word in _CODES_KEPT_IN_TEXT:
        return word, rest
    return "ERR", text


def typed_error(error: BaseException) -> SeckillError | None:
    """The SeckillError for an error redis-py raised for a SECKILL.* command, or None when the
    error is not the command's (OOM, a cluster redirection, a timeout, a failed login ...).

    A connection error becomes a ``ConnectionLostError`` (redis-py's ``LOADING`` error, a
    ConnectionError too, an ``UnavailableError``); raise it ``from`` the original.
    """
    if isinstance(error, SeckillError):
        return error
    if isinstance(error, redis_errors.ConnectionError) and not isinstance(
        error, (redis_errors.BusyLoadingError, *_NOT_LOST)
    ):
        return ConnectionLostError(str(error) or type(error).__name__)
    if not isinstance(error, (redis_errors.ResponseError, redis_errors.BusyLoadingError)):
        return None
    code, message = _code_and_message(error)
    kind = error_kind(code, message)
    if kind is None:
        return None
    return _CLASS_BY_KIND[kind](code, message)


def raise_typed(error: BaseException) -> None:
    """Raise the typed error for ``error``, if it has one (a ``ConnectionLostError`` ``from``
    redis-py's error, an error reply ``from None``, as redis-py's adds nothing); else return."""
    typed = typed_error(error)
    if typed is None:
        return
    if isinstance(typed, ConnectionLostError):
        raise typed from error
    raise typed from None
