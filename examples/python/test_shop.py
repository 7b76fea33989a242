"""examples/python/shop.py driven over HTTP through a whole small sale, against a real server.

Run by ``make test`` (scripts/test-python.sh): a redis-server with the module, the service under
uvicorn on a free loopback port, and buyers racing over HTTP.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "clients" / "python" / "tests"))
import servers  # noqa: E402  (the client's own server harness)

ITEM = "{sku:shop}"


@pytest.fixture
def server() -> Iterator[servers.Server]:
    with servers.standalone() as started:
        yield started


@pytest.fixture
def shop(server: servers.Server) -> Iterator[httpx.Client]:
    port = servers.free_port({server.port})
    service = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(HERE), "shop:app",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env={"SHOP_REDIS_URL": f"redis://127.0.0.1:{server.port}/0", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            deadline = time.monotonic() + 20
            while True:
                try:
                    http.get(f"/items/{ITEM}")
                    break
                except httpx.TransportError:
                    assert service.poll() is None, "the service exited"
                    assert time.monotonic() < deadline, "the service did not start"
                    time.sleep(0.1)
            yield http
    finally:
        service.terminate()
        service.wait(10)


def test_a_small_sale_sells_out_exactly_keeps_the_limit_and_never_sells_a_retry_twice(shop, server):
    http = shop
    assert http.post(f"/items/{ITEM}", params={"stock": 5, "limit": 1}).status_code == 201
    assert http.post(f"/items/{ITEM}", params={"stock": 5, "limit": 1}).status_code == 200

    def buy(n: int) -> httpx.Response:
        return http.post(f"/orders/o-{n}", params={"item": ITEM, "user": f"u{n}"})

    # 20 buyers race for 5 units, and each sends its click twice (a retry after a timeout).
    with ThreadPoolExecutor(10) as pool:
        first = list(pool.map(buy, range(20)))
        again = list(pool.map(buy, range(20)))
    held = [n for n, reply in enumerate(first) if reply.status_code == 201]
    assert len(held) == 5
    assert Counter(reply.status_code for reply in first) == {201: 5, 409: 15}
    assert all(reply.json()["error"] == "sold out" for reply in first if reply.status_code == 409)
    # A retry gets the first answer: the held orders are held still, nobody else got a unit.
    assert [reply.status_code for reply in again] == [reply.status_code for reply in first]
    assert http.get(f"/items/{ITEM}").json()["stock"] == 0

    # An order id is one purchase: used again for someone else, it is refused.
    reused = http.post(f"/orders/o-{held[0]}", params={"item": ITEM, "user": "someone-else"})
    assert (reused.status_code, reused.json()["error"]) == (409, "order id already used for another purchase")

    # A held order tells when it must be paid by.
    state = http.get(f"/orders/o-{held[0]}", params={"item": ITEM})
    assert state.status_code == 200
    assert (state.json()["status"], state.json()["user"], state.json()["qty"]) == ("held", f"u{held[0]}", 1)
    assert state.json()["pay_by_ms"] > time.time() * 1000
    assert http.get("/orders/nope", params={"item": ITEM}).json()["error"] == "no such order"

    # Three pay (one twice), one cancels (twice), one lets it be.
    for n in held[:3]:
        paid = http.post(f"/orders/o-{n}/pay", params={"item": ITEM})
        assert (paid.status_code, paid.json()["status"]) == (200, "paid")
    assert http.post(f"/orders/o-{held[0]}/pay", params={"item": ITEM}).status_code == 200
    assert http.get(f"/orders/o-{held[0]}", params={"item": ITEM}).json()["status"] == "confirmed"
    unknown = http.post("/orders/nope/pay", params={"item": ITEM})
    assert (unknown.status_code, unknown.json()["error"]) == (404, "no such order")
    cancelled = http.post(f"/orders/o-{held[3]}/cancel", params={"item": ITEM})
    assert cancelled.json()["units_returned"] == 1
    assert http.post(f"/orders/o-{held[3]}/cancel", params={"item": ITEM}).json()["units_returned"] == 0
    late_payment = http.post(f"/orders/o-{held[3]}/pay", params={"item": ITEM})
    assert (late_payment.status_code, late_payment.json()["error"]) == (410, "order cancelled")
    assert http.post(f"/orders/o-{held[3]}", params={"item": ITEM, "user": f"u{held[3]}"}).status_code == 410
    assert http.get(f"/items/{ITEM}").json()["stock"] == 1

    # One buyer, one unit: a buyer who paid cannot take the unit given back.
    again = http.post("/orders/second-try", params={"item": ITEM, "user": f"u{held[0]}"})
    assert (again.status_code, again.json()["error"]) == (409, "limit reached")

    # The unit given back is sold once more, to one of the buyers who missed out, and no more.
    late = [n for n in range(20) if n not in held]
    with ThreadPoolExecutor(10) as pool:
        replies = list(pool.map(lambda n: http.post(f"/orders/late-{n}", params={"item": ITEM, "user": f"u{n}"}), late))
    assert sorted(reply.status_code for reply in replies) == [201] + [409] * (len(late) - 1)
    assert http.get(f"/items/{ITEM}").json()["stock"] == 0
    assert http.get("/items/{sku:none}").status_code == 404

    # The order nobody paid for lapses (released now, as at its deadline): a payment is refused as
    # expired, and cancelling it gives nothing back, its unit went back on sale when it lapsed.
    with server.client() as admin:
        assert admin.execute_command("SECKILL.RELEASE", ITEM, f"o-{held[4]}") == 1
    expired = http.post(f"/orders/o-{held[4]}/pay", params={"item": ITEM})
    assert (expired.status_code, expired.json()["error"]) == (410, "order expired")
    assert http.get(f"/orders/o-{held[4]}", params={"item": ITEM}).json()["status"] == "lapsed"
    cancelled = http.post(f"/orders/o-{held[4]}/cancel", params={"item": ITEM})
    assert (cancelled.status_code, cancelled.json()["units_returned"]) == (200, 0)
    assert http.get(f"/items/{ITEM}").json()["stock"] == 1
    unknown = http.post("/orders/nope/cancel", params={"item": ITEM})
    assert (unknown.status_code, unknown.json()["error"]) == (404, "no such order")
    no_sale = http.post("/orders/nope/cancel", params={"item": "{sku:none}"})
    assert (no_sale.status_code, no_sale.json()["error"]) == (404, "no such sale")
