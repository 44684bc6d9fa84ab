"""Exponential retry back-off with jitter, the Java client's shape, on an injected random source."""

from __future__ import annotations

from collections.abc import Callable

import attrs

#: Each delay is scaled by a random factor in [1 - JITTER, 1 + JITTER].
JITTER = 0.2


@attrs.frozen
class Backoff:
    """Delays of ``base_ms * 2**(failures - 1)``, jittered, never above ``max_ms``.

    ``jitter`` returns a float in [0, 1), like ``random.random``; tests pass a constant.
    """

    base_ms: int
    max_ms: int
    jitter: Callable[[], float]

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th consecutive failure (1 for the first)."""
        exponent = min(max(failures, 1) - 1, 32)
        term = min(self.base_ms * 2.0 ** exponent, float(self.max_ms))
        draw = min(max(self.jitter(), 0.0), 1.0)
        factor = 1.0 - JITTER + 2.0 * JITTER * draw
        return min(term * factor, float(self.max_ms)) / 1000.0
