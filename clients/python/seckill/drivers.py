"""How a SECKILL command travels through each client library, sync and asyncio.

``Seckill`` builds a command's arguments (``commands``) and hands them to the driver of the client
it wraps, which sends it, or queues it in a pipeline or batch, and gives back the typed value:

- **redis-py and valkey-py** (its fork: the same API, other class names): the client decodes
  replies itself through the response callbacks registered on it (``replies``), and routes a
  cluster call by the keys the module declares (it reads ``COMMAND``).
- **Valkey GLIDE** (``glide`` asyncio, ``glide_sync``): ``custom_command``, whose replies are
  decoded here (GLIDE has no callbacks); a cluster client routes a command it does not know by its
  first argument, the item key, so only the commands of an order, which start with a count, are
  given their route. Batches (``Batch``, ``ClusterBatch``) queue the commands and run with
  ``execute(client=...)``.

Every error is typed in ``errors`` whatever the library. A write with a wait goes with its ``WAIT``
on one connection: a redis-py pipeline (standalone only), or a GLIDE non-atomic batch, which
GLIDE writes to one connection, routed on a cluster to the item key's master.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from . import commands
from .commands import Args
from .errors import lost_connection, raise_typed
from .pipelines import QueuedCommands
from .replies import RESPONSE_CALLBACKS, durable_result, register_response_callbacks
from .values import Durable

__all__ = ["sync_driver", "async_driver"]

_PIPELINE_REFUSES_WAIT = (
    "wait_replicas needs a client, not a pipeline: a queued write has no reply to wait after yet, "
    "and WAIT cannot block inside MULTI"
)
_NOT_A_BATCH = "execute() runs a pipeline or a batch; this Seckill wraps a client"


def _name(args: Args) -> str:
    """The command's name (``SECKILL.DEDUCT``, ...): always text, unlike its other arguments."""
    return str(args[0])


def _library(obj: Any) -> str | None:
    """The client library an object comes from (its class's, or a base class's, top package)."""
    for cls in type(obj).__mro__:
        package = cls.__module__.partition(".")[0]
        if package in ("redis", "valkey", "glide", "glide_sync", "glide_shared"):
            return package
    return None


# ---- redis-py and valkey-py -----------------------------------------------------------------


@dataclass(frozen=True)
class _RedisPyLike:
    """The classes of redis-py, or of valkey-py under its own names."""

    name: str
    cluster: type
    pipelines: tuple[type, ...]
    async_clients: tuple[type, ...]
    async_cluster: type
    async_pipelines: tuple[type, ...]


@cache
def _redis_py_like(package: str) -> _RedisPyLike:
    def load(module: str) -> ModuleType:
        return importlib.import_module(f"{package}{module}")

    root, asyncio_root = load(""), load(".asyncio")
    cluster_name = "RedisCluster" if package == "redis" else "ValkeyCluster"
    client_name = "Redis" if package == "redis" else "Valkey"
    async_cluster_pipeline = load(".asyncio.cluster").ClusterPipeline
    return _RedisPyLike(
        name="redis-py" if package == "redis" else "valkey-py",
        cluster=getattr(root, cluster_name),
        pipelines=(load(".client").Pipeline, load(".cluster").ClusterPipeline),
        async_clients=(getattr(asyncio_root, client_name), getattr(asyncio_root, cluster_name), async_cluster_pipeline),
        async_cluster=getattr(asyncio_root, cluster_name),
        async_pipelines=(load(".asyncio.client").Pipeline, async_cluster_pipeline),
    )


class _RedisPyClient:
    """A redis-py or valkey-py client: it decodes the replies itself (callbacks registered here)."""

    queues = False

    def __init__(self, client: Any, classes: _RedisPyLike) -> None:
        register_response_callbacks(client)
        self._client = client
        self._classes = classes

    def call(self, args: Args) -> Any:
        try:
            return self._client.execute_command(*args)
        except Exception as error:
            raise_typed(error)
            raise

    def _check_wait(self, cluster: type) -> None:
        if isinstance(self._client, cluster):
            raise TypeError(
                f"wait_replicas needs a standalone client: {self._classes.name}'s cluster client cannot "
                "send the write and WAIT on one connection to the item's master"
            )

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Durable[Any]:
        self._check_wait(self._classes.cluster)
        with self._client.pipeline(transaction=False) as pipe:
            pipe.execute_command(*args)
            pipe.execute_command(*wait)
            try:
                replies = pipe.execute(raise_on_error=False)
            except Exception as error:
                raise_typed(error)
                raise
        return durable_result(_name(args), replies, wanted)

    def execute(self, raise_on_error: bool, client: Any, options: Any) -> Any:
        raise TypeError(_NOT_A_BATCH)


class _RedisPyPipeline:
    """A redis-py or valkey-py pipeline (``transaction=True`` or not)."""

    queues = True

    def __init__(self, pipe: Any) -> None:
        register_response_callbacks(pipe)
        self._pipe = pipe
        self._queued = QueuedCommands()

    def call(self, args: Args) -> Any:
        length = len(self._pipe)
        self._queued.before_queue(length)
        try:
            reply = self._pipe.execute_command(*args)
        except Exception as error:
            raise_typed(error)
            raise
        self._queued.after_queue(length, len(self._pipe), _name(args))
        return reply

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Any:
        raise TypeError(_PIPELINE_REFUSES_WAIT)

    def _queued_for_run(self, client: Any) -> list[tuple[int, str]]:
        if client is not None:
            raise TypeError("a redis-py or valkey-py pipeline runs on its own client: call execute() without one")
        return self._queued.take(len(self._pipe))

    def execute(self, raise_on_error: bool, client: Any, options: Any) -> list[Any]:
        queued = self._queued_for_run(client)
        try:
            results = self._pipe.execute(raise_on_error=False)
        except Exception as error:
            _raise_if_lost_under(queued, error)
            raise
        return QueuedCommands.typed_results(results, queued, raise_on_error)


def _raise_if_lost_under(queued: list[tuple[int, str]], error: Exception) -> None:
    """A connection that failed under SECKILL commands makes them unavailable."""
    lost = lost_connection(error) if queued else None
    if lost is not None:
        raise lost from error


class _AsyncRedisPyClient(_RedisPyClient):
    def call(self, args: Args) -> Any:
        return _typed_errors(self._client.execute_command(*args))

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Any:
        self._check_wait(self._classes.async_cluster)  # refused at once, not when awaited
        return self._write_and_wait(args, wait, wanted)

    async def _write_and_wait(self, args: Args, wait: Args, wanted: int) -> Durable[Any]:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.execute_command(*args)
            pipe.execute_command(*wait)
            replies = await _typed_errors(pipe.execute(raise_on_error=False))
        return durable_result(_name(args), replies, wanted)


class _AsyncRedisPyPipeline(_RedisPyPipeline):
    def call(self, args: Args) -> Any:
        length = len(self._pipe)
        self._queued.before_queue(length)
        reply = self._pipe.execute_command(*args)
        self._queued.after_queue(length, len(self._pipe), _name(args))
        if reply is self._pipe:
            return reply
        return _typed_errors(reply)  # run at once: a pipeline watching keys

    async def execute(self, raise_on_error: bool, client: Any, options: Any) -> list[Any]:  # type: ignore[override]
        queued = self._queued_for_run(client)
        try:
            results = await self._pipe.execute(raise_on_error=False)
        except Exception as error:
            _raise_if_lost_under(queued, error)
            raise
        return QueuedCommands.typed_results(results, queued, raise_on_error)


async def _typed_errors(reply: Any) -> Any:
    try:
        return await reply
    except Exception as error:
        raise_typed(error)
        raise


# ---- Valkey GLIDE -----------------------------------------------------------------------------


def _glide(module: str) -> ModuleType:
    return importlib.import_module(f"glide_shared.{module}")


def _text_key(key: commands.Arg) -> str | None:
    """A key as GLIDE's routes take it (text), or None for bytes that are not UTF-8."""
    if isinstance(key, str):
        return key
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _primary_of(args: Args) -> Any:
    """The route to the master of the command's item key (or its order's first key)."""
    routes = _glide("routes")
    key = _text_key(commands.routing_key(args))
    return None if key is None else routes.SlotKeyRoute(routes.SlotType.PRIMARY, key)


def _decoded(args: Args, reply: Any) -> Any:
    return RESPONSE_CALLBACKS[_name(args)](reply)


class _GlideClient:
    """A GLIDE ``GlideClient`` or ``GlideClusterClient`` (sync; the asyncio one below)."""

    queues = False

    def __init__(self, client: Any, cluster: bool) -> None:
        self._client = client
        self._cluster = cluster

    def _routed(self, args: Args) -> dict[str, Any]:
        # GLIDE routes a command it does not know by its first argument; an order starts with a
        # count, so it is sent to its first key's master (a key that is not text is left to
        # GLIDE, which then follows the server's MOVED).
        if not self._cluster or commands.is_routed_by_first_argument(args):
            return {}
        route = _primary_of(args)
        return {} if route is None else {"route": route}

    def _send(self, args: Args) -> Any:
        return self._client.custom_command(list(args), **self._routed(args))

    def call(self, args: Args) -> Any:
        try:
            reply = self._send(args)
        except Exception as error:
            raise_typed(error)
            raise
        return _decoded(args, reply)

    def _wait_batch(self, args: Args, wait: Args) -> tuple[Any, Any]:
        """The write and its WAIT in a non-atomic batch, which GLIDE writes to one connection;
        in a cluster, routed whole to the item key's master (WAIT has no key of its own, and
        GLIDE would send it to every master)."""
        batch_module, options_module = _glide("commands.batch"), _glide("commands.batch_options")
        batch = (batch_module.ClusterBatch if self._cluster else batch_module.Batch)(is_atomic=False)
        batch.custom_command(list(args))
        batch.custom_command(list(wait))
        if not self._cluster:
            return batch, None
        route = _primary_of(args)
        if route is None:
            raise TypeError("wait_replicas on a GLIDE cluster client needs the item key as text (UTF-8)")
        return batch, options_module.ClusterBatchOptions(route=route)

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Durable[Any]:
        batch, options = self._wait_batch(args, wait)
        try:
            replies = self._client.exec(batch, raise_on_error=False, options=options)
        except Exception as error:
            raise_typed(error)
            raise
        return durable_result(_name(args), replies, wanted)

    def execute(self, raise_on_error: bool, client: Any, options: Any) -> Any:
        raise TypeError(_NOT_A_BATCH)


class _AsyncGlideClient(_GlideClient):
    def call(self, args: Args) -> Any:
        return self._call(args)

    async def _call(self, args: Args) -> Any:
        return _decoded(args, await _typed_errors(self._send(args)))

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Any:
        batch, options = self._wait_batch(args, wait)  # refused at once, not when awaited
        return self._write_and_wait(_name(args), batch, options, wanted)

    async def _write_and_wait(self, command: str, batch: Any, options: Any, wanted: int) -> Durable[Any]:
        replies = await _typed_errors(self._client.exec(batch, raise_on_error=False, options=options))
        return durable_result(command, replies, wanted)


class _GlideBatch:
    """A GLIDE ``Batch`` or ``ClusterBatch``: it holds no client, so ``execute(client=...)`` names
    the one to run it on. It keeps its commands after a run, and so do the positions noted here."""

    queues = True

    def __init__(self, batch: Any, cluster: bool, library: str) -> None:
        self._batch = batch
        self._cluster = cluster
        self._library = library
        self._queued = QueuedCommands()

    def call(self, args: Args) -> Any:
        length = len(self._batch.commands)
        self._queued.before_queue(length)
        self._batch.custom_command(list(args))
        self._queued.after_queue(length, len(self._batch.commands), _name(args))
        return self._batch

    def call_and_wait(self, args: Args, wait: Args, wanted: int) -> Any:
        raise TypeError(_PIPELINE_REFUSES_WAIT)

    def _run(self, client: Any, options: Any) -> tuple[list[tuple[int, str]], Any]:
        """The commands noted, and the options to run the batch with (checked first)."""
        if client is None or _library(client) != self._library:
            kind = "asyncio" if self._library == "glide" else "sync"
            raise TypeError(f"a GLIDE batch runs on a client: execute(client=...) with a {kind} GLIDE client")
        queued = self._queued.current(len(self._batch.commands))
        if options is None and self._cluster and self._batch.is_atomic and queued:
            # A transaction goes where its first key lives; an order's first argument is a count,
            # so the transaction is sent to the master of the first SECKILL command's key (every
            # key of a transaction shares one slot).
            position, _ = queued[0]
            route = _primary_of(tuple(self._batch.commands[position][1]))
            if route is not None:
                options = _glide("commands.batch_options").ClusterBatchOptions(route=route)
        return queued, options

    def execute(self, raise_on_error: bool, client: Any, options: Any) -> list[Any] | None:
        queued, options = self._run(client, options)
        try:
            results = client.exec(self._batch, raise_on_error=False, options=options)
        except Exception as error:
            _raise_if_lost_under(queued, error)
            raise
        if results is None:  # a transaction whose WATCHed keys changed
            return None
        return QueuedCommands.typed_results(results, queued, raise_on_error)


class _AsyncGlideBatch(_GlideBatch):
    async def execute(  # type: ignore[override]
        self, raise_on_error: bool, client: Any, options: Any
    ) -> list[Any] | None:
        queued, options = self._run(client, options)
        try:
            results = await client.exec(self._batch, raise_on_error=False, options=options)
        except Exception as error:
            _raise_if_lost_under(queued, error)
            raise
        if results is None:
            return None
        return QueuedCommands.typed_results(results, queued, raise_on_error)


def _is_glide_cluster(obj: Any) -> bool:
    return any(cls.__name__ in ("GlideClusterClient", "ClusterBatch") for cls in type(obj).__mro__)


# ---- which driver -------------------------------------------------------------------------------

_EXPECTED = "a redis-py, valkey-py or Valkey GLIDE client, pipeline or batch"


def sync_driver(client: Any) -> Any:
    """The driver of a sync client, pipeline or batch; a TypeError for an asyncio one."""
    library = _library(client)
    if library in ("redis", "valkey"):
        classes = _redis_py_like(library)
        if isinstance(client, classes.async_clients):
            raise TypeError("this is an asyncio client: wrap it with seckill.asyncio.Seckill")
        if isinstance(client, classes.pipelines):
            return _RedisPyPipeline(client)
        return _RedisPyClient(client, classes)
    if library == "glide":
        raise TypeError("this is an asyncio GLIDE client: wrap it with seckill.asyncio.Seckill")
    if library == "glide_sync":
        return _GlideClient(client, _is_glide_cluster(client))
    if library == "glide_shared":
        return _GlideBatch(client, _is_glide_cluster(client), "glide_sync")
    raise TypeError(f"expected {_EXPECTED}, got {type(client).__name__}")


def async_driver(client: Any) -> Any:
    """The driver of an asyncio client, pipeline or batch; a TypeError for a sync one."""
    library = _library(client)
    if library in ("redis", "valkey"):
        classes = _redis_py_like(library)
        if isinstance(client, classes.async_pipelines):
            return _AsyncRedisPyPipeline(client)
        if isinstance(client, classes.async_clients):
            return _AsyncRedisPyClient(client, classes)
        raise TypeError("this is a sync client: wrap it with seckill.Seckill")
    if library == "glide_sync":
        raise TypeError("this is a sync GLIDE client: wrap it with seckill.Seckill")
    if library == "glide":
        return _AsyncGlideClient(client, _is_glide_cluster(client))
    if library == "glide_shared":
        return _AsyncGlideBatch(client, _is_glide_cluster(client), "glide")
    raise TypeError(f"expected {_EXPECTED}, got {type(client).__name__}")
