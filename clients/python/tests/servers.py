"""Real redis-server / valkey-server processes with the seckill module, for the tests.

The module comes from env SECKILL_MODULE (required), the server binary from SECKILL_SERVER
(default ``redis-server``). Servers listen on loopback ports in 20000-32000, keep no data on disk,
and die with the test process (PR_SET_PDEATHSIG) even if it is killed.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

PORT_RANGE = (20000, 32000)
START_TIMEOUT = 20.0
CLUSTER_TIMEOUT = 60.0


class ConfigError(RuntimeError):
    pass


def module_path() -> str:
    path = os.environ.get("SECKILL_MODULE", "")
    if not path:
        raise ConfigError(
            "SECKILL_MODULE is not set: point it at the built module, "
            "e.g. SECKILL_MODULE=$PWD/target/release/libseckill.so"
        )
    if not os.path.isfile(path):
        raise ConfigError(f"SECKILL_MODULE={path} is not a file")
    return os.path.abspath(path)


def server_binary() -> str:
    binary = os.environ.get("SECKILL_SERVER") or "redis-server"
    found = shutil.which(binary)
    if found is None:
        raise ConfigError(f"server binary {binary!r} (SECKILL_SERVER) not found")
    return found


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(taken: set[int]) -> int:
    for _ in range(1000):
        port = random.randint(*PORT_RANGE)
        if port not in taken and _port_is_free(port):
            taken.add(port)
            return port
    raise RuntimeError("no free port in 20000-32000")


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Server:
    """One server process in its own temporary directory."""

    def __init__(self, root: Path, name: str, extra: list[str] | None = None) -> None:
        self.dir = root / name
        self.dir.mkdir()
        self.extra = extra or []
        self.port = 0
        self.bus_port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, taken: set[int], cluster: bool = False) -> None:
        last_log = ""
        for _ in range(5):  # another process may take a port between the check and the bind
            self.port = free_port(taken)
            args = [
                server_binary(),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                "--dir", str(self.dir),
                "--logfile", "server.log",
                "--loadmodule", module_path(),
                *self.extra,
            ]  # fmt: skip
            if cluster:
                self.bus_port = free_port(taken)
                args += [
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-port", str(self.bus_port),
                    "--cluster-node-timeout", "5000",
                ]  # fmt: skip
            self.process = subprocess.Popen(
                args, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent
            )
            if self._wait_ready():
                return
            last_log = self._log_tail()
            self.stop()
            for leftover in self.dir.iterdir():
                leftover.unlink()
        raise RuntimeError(f"{server_binary()} did not start; last log:\n{last_log}")

    def _wait_ready(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        client = redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=5)
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.05)
            return False
        finally:
            client.close()

    def _log_tail(self) -> str:
        log = self.dir / "server.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        if self.process is not None and self.process.stderr is not None and self.process.poll() is not None:
            text += self.process.stderr.read().decode(errors="replace")
        return text[-3000:]

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, **kwargs)  # type: ignore[arg-type]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def standalone(*extra: str) -> Iterator[Server]:
    """One server, started with the ``extra`` arguments (e.g. ``"--min-replicas-to-write", "1"``)."""
    root = Path(tempfile.mkdtemp(prefix="seckill-py-", dir="/tmp"))
    server = Server(root, "standalone", list(extra))
    try:
        server.start(set())
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _replication(server: Server) -> dict[str, object]:
    with server.client() as client:
        return dict(client.info("replication"))


def _in_sync(master: Server, replica: Server) -> bool:
    first = _replication(master).get("slave0")
    return (
        _replication(replica).get("master_link_status") == "up"
        and isinstance(first, dict)
        and first.get("state") == "online"
    )


@contextmanager
def replicated() -> Iterator[tuple[Server, Server]]:
    """A master and one replica of it, the replica in sync (its link up, the master counting it
    online) before they are handed out."""
    root = Path(tempfile.mkdtemp(prefix="seckill-py-replicated-"))
    master = Server(root, "master")
    taken: set[int] = set()
    try:
        master.start(taken)
        replica = Server(root, "replica", ["--replicaof", "127.0.0.1", str(master.port)])
        try:
            replica.start(taken)
            deadline = time.monotonic() + START_TIMEOUT
            while not _in_sync(master, replica):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the replica did not sync: {_replication(replica)}")
                time.sleep(0.05)
            yield master, replica
        finally:
            replica.stop()
    finally:
        master.stop()
        shutil.rmtree(root, ignore_errors=True)


def _cluster_info(node: Server) -> dict[str, str]:
    with node.client() as client:
        text = client.execute_command("CLUSTER", "INFO")
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _slot_map(node: Server) -> list[tuple[int, int, int]]:
    with node.client() as client:
        slots = client.execute_command("CLUSTER", "SLOTS")
    return sorted((int(entry[0]), int(entry[1]), int(entry[2][1])) for entry in slots)


@contextmanager
def cluster(masters: int = 3) -> Iterator[list[Server]]:
    """A real cluster of ``masters`` masters, every slot assigned and agreed on by every node."""
    root = Path(tempfile.mkdtemp(prefix="seckill-py-cluster-", dir="/tmp"))
    nodes = [Server(root, f"node{i}") for i in range(masters)]
    taken: set[int] = set()
    try:
        for node in nodes:
            node.start(taken, cluster=True)
        slot_count = 16384
        for i, node in enumerate(nodes):
            first = i * slot_count // masters
            last = (i + 1) * slot_count // masters - 1
            with node.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        with nodes[0].client() as client:
            for node in nodes[1:]:
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port, node.bus_port)
        expected = sorted(
            (i * slot_count // masters, (i + 1) * slot_count // masters - 1, node.port)
            for i, node in enumerate(nodes)
        )
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        while True:
            infos = [_cluster_info(node) for node in nodes]
            if all(
                info.get("cluster_state") == "ok" and info.get("cluster_known_nodes") == str(masters)
                for info in infos
            ) and all(_slot_map(node) == expected for node in nodes):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster did not converge: {infos}")
            time.sleep(0.1)
        yield nodes
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


def moved_errors(nodes: list[Server]) -> int:
    """The sum over all masters of INFO errorstats' errorstat_MOVED (absent = 0)."""
    total = 0
    for node in nodes:
        with node.client() as client:
            stats = client.execute_command("INFO", "errorstats")
        if isinstance(stats, dict):
            moved = stats.get("errorstat_MOVED")
            total += int(moved["count"]) if isinstance(moved, dict) else 0
        else:
            for line in stats.splitlines():
                if line.startswith("errorstat_MOVED:"):
                    total += int(line.split("count=")[1].split(",")[0])
    return total
