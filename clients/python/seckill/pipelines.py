"""Typed errors in a pipeline's results.

redis-py runs response callbacks only on replies that are not errors, and puts error replies in
a pipeline's results as plain ResponseError (in a transaction it never shows them to a callback).
So a Seckill that wraps a pipeline notes where its commands sit in the pipeline, and
``Seckill.execute()`` replaces the errors at those positions with typed SeckillErrors.
"""

from __future__ import annotations

from typing import Any

from .errors import typed_error

__all__ = ["QueuedCommands"]


class QueuedCommands:
    """Positions of the SECKILL.* commands queued in one pipeline since it last ran."""

    def __init__(self) -> None:
        self._positions: list[int] = []
        self._length = 0

    def _drop_if_run_elsewhere(self, length: int) -> None:
        # The pipeline was executed or reset without us: what we noted is about another batch.
        if length < self._length:
            self._positions.clear()
            self._length = 0

    def before_queue(self, length: int) -> None:
        self._drop_if_run_elsewhere(length)

    def after_queue(self, length_before: int, length_after: int) -> None:
        if length_after == length_before + 1:  # queued, not run at once (a pipeline watching keys)
            self._positions.append(length_before)
            self._length = length_after

    def take(self, length: int) -> list[int]:
        """The positions for the batch about to run, forgetting them."""
        self._drop_if_run_elsewhere(length)
        positions = self._positions
        self._positions = []
        self._length = 0
        return positions

    @staticmethod
    def typed_results(results: list[Any], positions: list[int], raise_on_error: bool) -> list[Any]:
        for position in positions:
            if position < len(results) and isinstance(results[position], BaseException):
                typed = typed_error(results[position])
                if typed is not None:
                    results[position] = typed
        if raise_on_error:
            for number, result in enumerate(results, 1):
                if isinstance(result, Exception):
                    result.add_note(f"(command #{number} of the pipeline)")
                    raise result
        return results
