"""Fixtures: one standalone server and one 3-master cluster for the whole session, both real.

Each test gets fresh key names, so the servers are shared safely and never flushed.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from types import FrameType

import pytest
import redis

import servers


def pytest_configure(config: pytest.Config) -> None:
    try:
        servers.module_path()
        servers.server_binary()
    except servers.ConfigError as error:
        raise pytest.UsageError(str(error)) from None
    # A SIGTERM (a CI job cancelled, `timeout`) stops the run like Ctrl-C does, so the fixtures'
    # teardown still stops the servers and removes their directories.
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def server() -> Iterator[servers.Server]:
    with servers.standalone() as started:
        yield started


@pytest.fixture
def replicated() -> Iterator[tuple[servers.Server, servers.Server]]:
    """A master and its replica, in sync, new for each test: a test may pause, stop or promote them."""
    with servers.replicated() as pair:
        yield pair


@pytest.fixture
def master_short_of_replicas() -> Iterator[servers.Server]:
    """A master started with ``--min-replicas-to-write 1`` and no replica: it refuses every write."""
    with servers.standalone("--min-replicas-to-write", "1") as started:
        yield started


@pytest.fixture(scope="session")
def cluster_nodes() -> Iterator[list[servers.Server]]:
    with servers.cluster(3) as nodes:
        yield nodes


@pytest.fixture
def key() -> str:
    """A key name no other test uses, with a hash tag so that its companions share its slot."""
    return f"{{sku:{uuid.uuid4().hex[:12]}}}"


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture
def r(server: servers.Server, protocol: int) -> Iterator[redis.Redis]:
    client = redis.Redis(port=server.port, protocol=protocol)
    yield client
    client.close()


@pytest.fixture
def admin(server: servers.Server) -> Iterator[redis.Redis]:
    """A plain client, never wrapped, for looking at the server behind the library's back."""
    client = server.client()
    yield client
    client.close()


@pytest.fixture
def rc(cluster_nodes: list[servers.Server], protocol: int) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster(host="127.0.0.1", port=cluster_nodes[0].port, protocol=protocol)
    yield client
    client.close()
