"""Typed errors of the SECKILL.* commands, decided from the server's error reply in one place,
whichever client library raised it: redis-py, valkey-py (its fork, with the same exception classes
under the same names) or Valkey GLIDE (which rewords the reply: see ``_glide_code_and_message``).
"""

from __future__ import annotations

import enum
import importlib
import re
from types import ModuleType
from typing import ClassVar

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
    "lost_connection",
]


def _installed(module: str) -> ModuleType | None:
    """The module, or None when its package is not installed (an app installs one client)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


# The exception modules of redis-py and valkey-py, whichever are installed: both name their
# classes alike (ResponseError, NoPermissionError, ConnectionError, ...).
_REDIS_PY_LIKE: tuple[ModuleType, ...] = tuple(
    module for module in (_installed("redis.exceptions"), _installed("valkey.exceptions")) if module is not None
)
# GLIDE 2's exceptions, shared by its asyncio client (valkey-glide) and its sync one
# (valkey-glide-sync).
_GLIDE = _installed("glide_shared.exceptions")


def _classes(name: str) -> tuple[type[BaseException], ...]:
    """The class ``name`` of each installed redis-py-like library."""
    return tuple(getattr(module, name) for module in _REDIS_PY_LIKE)


def _glide_classes(name: str) -> tuple[type[BaseException], ...]:
    return (getattr(_GLIDE, name),) if _GLIDE is not None else ()


# Each SeckillError is also the error class each installed client library raises for an error
# reply, so that handlers written for the client library still catch it
# (``except redis.exceptions.ResponseError``, ``except valkey.exceptions.ResponseError``,
# GLIDE's ``except RequestError``).
_REPLY_ERRORS = (*_classes("ResponseError"), *_glide_classes("RequestError")) or (Exception,)
_LOST_CONNECTION_ERRORS = (*_classes("ConnectionError"), *_glide_classes("ConnectionError"))


class ErrorKind(enum.Enum):
    REQUEST_ID_CONFLICT = "REQUEST_ID_CONFLICT"
    ORDER_STREAM = "ORDER_STREAM"
    ITEM_FULL = "ITEM_FULL"
    WRONG_TYPE = "WRONG_TYPE"
    NO_PERMISSION = "NO_PERMISSION"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    UNAVAILABLE = "UNAVAILABLE"


class SeckillError(*_REPLY_ERRORS):  # type: ignore[misc]
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


class NoPermissionError(SeckillError, *_classes("NoPermissionError")):  # type: ignore[misc]
    """The ACL user may not do this (also a ``redis.exceptions.NoPermissionError``, and
    valkey-py's, when installed)."""

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


class ConnectionLostError(UnavailableError, *_LOST_CONNECTION_ERRORS):  # type: ignore[misc]
    """The connection failed before the reply came (also the ``ConnectionError`` of each installed
    client library, raised from the client's own): the write may or may not have happened.
    ``code`` is ``""``, as there was no reply."""

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


def error_kind(code: str, message: str) -> ErrorKind | None:
    """The kind of a SECKILL.* error reply, or None for an error that is not about the command
    (OOM, a cluster redirection, ...) and stays the client library's own exception."""
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


# redis-py and valkey-py strip the code of these replies and say it with the exception's class
# instead (by class name: the same in both).
_CODE_BY_CLASS_NAME = (
    ("NoPermissionError", "NOPERM"),
    ("TryAgainError", "TRYAGAIN"),
    ("ClusterCrossSlotError", "CROSSSLOT"),
    ("MovedError", "MOVED"),
    ("AskError", "ASK"),
    ("MasterDownError", "MASTERDOWN"),
    ("ClusterDownError", "CLUSTERDOWN"),
    ("OutOfMemoryError", "OOM"),
    ("ReadOnlyError", "READONLY"),
    ("ExecAbortError", "EXECABORT"),
    ("NoScriptError", "NOSCRIPT"),
    ("BusyLoadingError", "LOADING"),  # a ConnectionError, not a ResponseError
)
_CODE_BY_CLASS: tuple[tuple[type[BaseException], str], ...] = tuple(
    (cls, code) for name, code in _CODE_BY_CLASS_NAME for cls in _classes(name)
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

# GLIDE words an error reply as its core (a fork of redis-rs) formats it: a code it knows becomes
# the name of its error kind, "ERR request id ..." reads "An error was signalled by the server:
# - ResponseError: request id ...", and any other code stays in front, with a colon:
# "WRONGTYPE: Operation against ...". The names of the known kinds, and their codes:
_CODE_BY_GLIDE_KIND = {
    "ResponseError": "ERR",
    "ExecAbortError": "EXECABORT",
    "BusyLoadingError": "LOADING",
    "NoScriptError": "NOSCRIPT",
    "Moved": "MOVED",
    "Ask": "ASK",
    "TryAgain": "TRYAGAIN",
    "ClusterDown": "CLUSTERDOWN",
    "CrossSlot": "CROSSSLOT",
    "MasterDown": "MASTERDOWN",
    "ReadOnly": "READONLY",
    "NotBusy": "NOTBUSY",
    "PermissionDenied": "NOPERM",
}
_GLIDE_KNOWN_CODE = re.compile(r"An error was signalled by the server: ?- (\w+)(?:: (.*))?\Z", re.DOTALL)
_GLIDE_OTHER_CODE = re.compile(r"([A-Z][A-Z0-9_-]*): (.*)\Z", re.DOTALL)


def _redis_py_code_and_message(error: BaseException) -> tuple[str, str]:
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    for cls, code in _CODE_BY_CLASS:
        if isinstance(error, cls):
            return code, text
    word, _, rest = text.partition(" ")
    if word in _CODES_KEPT_IN_TEXT:
        return word, rest
    return "ERR", text


def _glide_code_and_message(error: BaseException) -> tuple[str, str] | None:
    """The server's code and message back from GLIDE's wording, or None for an error GLIDE raised
    itself (a closed client, a timeout, ...)."""
    text = str(error)
    known = _GLIDE_KNOWN_CODE.match(text)
    if known is not None:
        code = _CODE_BY_GLIDE_KIND.get(known.group(1))
        return None if code is None else (code, known.group(2) or "")
    other = _GLIDE_OTHER_CODE.match(text)
    return None if other is None else (other.group(1), other.group(2))


def _is_instance(error: BaseException, classes: tuple[type[BaseException], ...]) -> bool:
    return bool(classes) and isinstance(error, classes)


def _reply_code_and_message(error: BaseException) -> tuple[str, str] | None:
    """The code and message of the error reply ``error`` stands for, from any client library;
    None when it is not an error reply."""
    if _is_instance(error, (*_classes("ResponseError"), *_classes("BusyLoadingError"))):
        return _redis_py_code_and_message(error)
    if _GLIDE is not None and type(error) is _GLIDE.RequestError:  # its subclasses are not replies
        return _glide_code_and_message(error)
    return None


def _is_lost_connection(error: BaseException) -> bool:
    """The connection failed during the call. Not redis-py's LOADING (a ConnectionError there, a
    reply here) nor a failed login (sending again will not help)."""
    if _is_instance(error, _classes("ConnectionError")):
        not_lost = (*_classes("BusyLoadingError"), *_classes("AuthenticationError"), *_classes("AuthorizationError"))
        return not isinstance(error, not_lost)
    return _is_instance(error, _glide_classes("ConnectionError"))


def typed_error(error: BaseException) -> SeckillError | None:
    """The SeckillError for an error a client library raised for a SECKILL.* command, or None
    when the error is not the command's (OOM, a cluster redirection, a timeout, a failed login
    ...), which stays the client library's own.

    A connection error becomes a ``ConnectionLostError`` (raise it ``from`` the original); an
    error reply keeps its code and message, however the client library worded them.
    """
    if isinstance(error, SeckillError):
        return error
    if _is_lost_connection(error):
        return ConnectionLostError(str(error) or type(error).__name__)
    reply = _reply_code_and_message(error)
    if reply is None:
        return None
    code, message = reply
    kind = error_kind(code, message)
    if kind is None:
        return None
    return _CLASS_BY_KIND[kind](code, message)


def raise_typed(error: BaseException) -> None:
    """Raise the typed error for ``error``, if it has one (a ``ConnectionLostError`` ``from``
    the client's error, an error reply ``from None``, as the client's adds nothing); else return."""
    typed = typed_error(error)
    if typed is None:
        return
    if isinstance(typed, ConnectionLostError):
        raise typed from error
    raise typed from None


def lost_connection(error: BaseException) -> ConnectionLostError | None:
    """The ``ConnectionLostError`` for a connection that failed under a batch of commands, or
    None for any other error (a batch's own errors are not one command's)."""
    return ConnectionLostError(str(error) or type(error).__name__) if _is_lost_connection(error) else None
