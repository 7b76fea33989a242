"""A process that runs one Cart call on the cluster and stops dead right after its k-th command.

test_cart.py runs it as a real child process, to stand for an app server that crashes at any
point of a cart's saga:

    python cart_child.py '{"port": 7000, "stop_after": 2, "call": "place", "cart_id": "c1",
                           "user": "ann", "lines": [["k1", 1], ["k2", 2]], "hold_seconds": 900}'

``call`` is ``place`` (with ``user``, ``lines``, ``hold_seconds``), ``confirm`` or ``cancel``
(with ``keys``). Once the server has answered the ``stop_after``-th SECKILL command, the process
ends with ``os._exit(STOPPED_DEAD)``: no cleanup, no later step, as a killed process. A call that
sends fewer commands finishes: it prints ``{"sent": n}`` and exits 0.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import redis

from seckill import Cart

STOPPED_DEAD = 86


class StopsDeadAfter(redis.RedisCluster):
    """A real cluster client that ends the process once it has the reply to its k-th SECKILL
    command (the commands redis-py sends on its own, to learn the slots, are not counted)."""

    def __init__(self, stop_after: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stop_after = stop_after
        self.sent = 0

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        reply = super().execute_command(*args, **kwargs)
        if str(args[0]).upper().startswith("SECKILL."):
            self.sent += 1
            if self.sent == self.stop_after:
                os._exit(STOPPED_DEAD)
        return reply


def main(spec: dict[str, Any]) -> None:
    client = StopsDeadAfter(spec["stop_after"], host="127.0.0.1", port=spec["port"])
    cart = Cart(client)
    if spec["call"] == "place":
        lines = [(key, qty) for key, qty in spec["lines"]]
        cart.place(spec["cart_id"], spec["user"], lines, spec["hold_seconds"])
    elif spec["call"] == "confirm":
        cart.confirm(spec["cart_id"], spec["keys"])
    elif spec["call"] == "cancel":
        cart.cancel(spec["cart_id"], spec["keys"])
    else:
        raise ValueError(f"unknown call {spec['call']!r}")
    print(json.dumps({"sent": client.sent}))
    client.close()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
