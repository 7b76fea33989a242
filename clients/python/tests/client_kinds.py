"""The client libraries the library wraps, behind one face, so that one test runs through each.

A ``ClientKind`` makes standalone and cluster clients, pipelines or batches, wraps them in the
right ``Seckill`` (sync or asyncio), runs what a call returns (awaiting it on the kind's own event
loop for an asyncio kind) and sends raw commands. The tests then read the same whatever the kind.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import glide
import glide_sync
import redis
import redis.asyncio
import valkey
import valkey.asyncio

import seckill
import seckill.asyncio

# A GLIDE request times out after 250 ms by default: longer, for the waits of the durable tests.
GLIDE_REQUEST_TIMEOUT_MS = 5000


class ClientKind:
    """One client library (and sync or asyncio)."""

    name: str
    is_async = False
    #: The class the library raises for an error reply: a SeckillError must be one too.
    reply_error: type[BaseException]

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop() if self.is_async else None

    def __repr__(self) -> str:
        return self.name

    def run(self, value: Any) -> Any:
        """A call's result: awaited on this kind's loop when it is awaitable."""
        if self.loop is not None and inspect.isawaitable(value):
            return self.loop.run_until_complete(value)
        return value

    def seckill(self, wrapped: Any) -> Any:
        return seckill.asyncio.Seckill(wrapped) if self.is_async else seckill.Seckill(wrapped)

    def execute(self, sk: Any, client: Any, raise_on_error: bool = True) -> Any:
        """Run a wrapped pipeline or batch made from ``client``."""
        return self.run(sk.execute(raise_on_error))

    def standalone(self, port: int, protocol: int = 3, user: tuple[str, str] | None = None) -> Any:
        raise NotImplementedError

    def cluster(self, port: int, protocol: int = 3) -> Any:
        raise NotImplementedError

    def pipeline(self, client: Any, transaction: bool) -> Any:
        return client.pipeline(transaction=transaction)

    def raw(self, client: Any, args: Sequence[str]) -> Any:
        """Send a command as the library sends any, nothing decoded or typed."""
        return self.run(client.execute_command(*args))

    def close(self, client: Any) -> None:
        self.run(client.aclose() if self.is_async else client.close())

    def close_loop(self) -> None:
        if self.loop is not None:
            self.loop.close()


class RedisPyLike(ClientKind):
    """redis-py, or valkey-py (its fork, the same API under other names); sync or asyncio."""

    def __init__(self, library: Any, name: str, is_async: bool = False) -> None:
        self.name = name
        self.is_async = is_async
        self.reply_error = library.exceptions.ResponseError
        api = library.asyncio if is_async else library
        self._client = getattr(api, "Redis", None) or api.Valkey
        self._cluster = getattr(api, "RedisCluster", None) or api.ValkeyCluster
        super().__init__()

    def standalone(self, port: int, protocol: int = 3, user: tuple[str, str] | None = None) -> Any:
        username, password = user or (None, None)
        return self._client(port=port, protocol=protocol, username=username, password=password)

    def cluster(self, port: int, protocol: int = 3) -> Any:
        return self._cluster(host="127.0.0.1", port=port, protocol=protocol)


class Glide(ClientKind):
    """GLIDE, sync (``glide_sync``) or asyncio (``glide``): the same API, awaited or not."""

    reply_error = glide_sync.RequestError  # both share glide_shared's classes

    def __init__(self, library: Any, name: str, is_async: bool) -> None:
        self.library = library
        self.name = name
        self.is_async = is_async
        super().__init__()

    def _protocol(self, protocol: int) -> Any:
        return self.library.ProtocolVersion.RESP3 if protocol == 3 else self.library.ProtocolVersion.RESP2

    def standalone(self, port: int, protocol: int = 3, user: tuple[str, str] | None = None) -> Any:
        lib = self.library
        credentials = None if user is None else lib.ServerCredentials(password=user[1], username=user[0])
        config = lib.GlideClientConfiguration(
            [lib.NodeAddress("127.0.0.1", port)],
            protocol=self._protocol(protocol),
            credentials=credentials,
            request_timeout=GLIDE_REQUEST_TIMEOUT_MS,
        )
        return self.run(lib.GlideClient.create(config))

    def cluster(self, port: int, protocol: int = 3) -> Any:
        lib = self.library
        config = lib.GlideClusterClientConfiguration(
            [lib.NodeAddress("127.0.0.1", port)],
            protocol=self._protocol(protocol),
            request_timeout=GLIDE_REQUEST_TIMEOUT_MS,
        )
        return self.run(lib.GlideClusterClient.create(config))

    def pipeline(self, client: Any, transaction: bool) -> Any:
        batch = self.library.ClusterBatch if isinstance(client, self.library.GlideClusterClient) else self.library.Batch
        return batch(is_atomic=transaction)

    def execute(self, sk: Any, client: Any, raise_on_error: bool = True) -> Any:
        return self.run(sk.execute(raise_on_error, client=client))

    def raw(self, client: Any, args: Sequence[str]) -> Any:
        return self.run(client.custom_command(list(args)))

    def close(self, client: Any) -> None:
        self.run(client.close())


def all_kinds() -> list[ClientKind]:
    return [
        RedisPyLike(redis, "redis-py"),
        RedisPyLike(valkey, "valkey-py"),
        RedisPyLike(valkey, "valkey-py-asyncio", is_async=True),
        Glide(glide_sync, "glide-sync", is_async=False),
        Glide(glide, "glide-asyncio", is_async=True),
    ]


def quiet_glide() -> None:
    """GLIDE logs a warning line for each error reply by default: errors only, here."""
    for library in (glide, glide_sync):
        library.Logger.set_logger_config(library.LogLevel.ERROR)
