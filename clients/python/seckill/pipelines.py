"""Typed values and typed errors in a pipeline's (or a GLIDE batch's) results.

redis-py runs response callbacks only on replies that are not errors, and puts error replies in
a pipeline's results as plain ResponseError (in a transaction it never shows them to a callback);
GLIDE has no callbacks at all, and gives a batch's raw replies. So a Seckill that wraps a pipeline
or a batch notes where its commands sit in it, and which they are, and ``Seckill.execute()``
decodes the results at those positions (decoding a value redis-py decoded already changes
nothing) and replaces the errors there with typed SeckillErrors.
"""

from __future__ import annotations

from typing import Any

from .errors import typed_error
from .replies import RESPONSE_CALLBACKS

__all__ = ["QueuedCommands"]

#: Where a SECKILL command sits in a batch, and its name (``SECKILL.DEDUCT``, ...).
Queued = tuple[int, str]


class QueuedCommands:
    """Positions of the SECKILL.* commands queued in one pipeline or batch since it last ran."""

    def __init__(self) -> None:
        self._queued: list[Queued] = []
        self._length = 0

    def _drop_if_run_elsewhere(self, length: int) -> None:
        # The pipeline was executed or reset without us: what we noted is about another batch.
        if length < self._length:
            self._queued.clear()
            self._length = 0

    def before_queue(self, length: int) -> None:
        self._drop_if_run_elsewhere(length)

    def after_queue(self, length_before: int, length_after: int, command: str) -> None:
        if length_after == length_before + 1:  # queued, not run at once (a pipeline watching keys)
            self._queued.append((length_before, command))
            self._length = length_after

    def current(self, length: int) -> list[Queued]:
        """The commands of the batch about to run, still noted (a GLIDE batch may run again)."""
        self._drop_if_run_elsewhere(length)
        return list(self._queued)

    def take(self, length: int) -> list[Queued]:
        """The commands of the batch about to run, forgetting them (a redis-py pipeline empties
        when it runs)."""
        queued = self.current(length)
        self._queued = []
        self._length = 0
        return queued

    @staticmethod
    def typed_results(results: list[Any], queued: list[Queued], raise_on_error: bool) -> list[Any]:
        for position, command in queued:
            if position >= len(results):
                continue
            result = results[position]
            if isinstance(result, BaseException):
                results[position] = typed_error(result) or result
            else:
                results[position] = RESPONSE_CALLBACKS[command](result)
        if raise_on_error:
            for number, result in enumerate(results, 1):
                if isinstance(result, Exception):
                    result.add_note(f"(command #{number} of the pipeline)")
                    raise result
        return results
