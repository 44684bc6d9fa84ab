"""The one retry back-off of groupkit: exponential with jitter, the Java client's shape.

It follows ``org.apache.kafka.common.utils.ExponentialBackoff`` (multiplier 2, jitter 0.2, as
the Java client configures it for ``retry.backoff.ms``/``retry.backoff.max.ms`` and
``reconnect.backoff.ms``/``reconnect.backoff.max.ms``): the n-th consecutive failure waits
``initial_ms * 2**(n - 1)`` scaled by a random factor in [0.8, 1.2], never more than
``max_ms``; with ``max_ms <= initial_ms`` every wait is ``max_ms``, without jitter. Every retry
loop and reconnect in groupkit takes its delays from here. Sans-IO: the random source is
injected (tests pass a constant); by default it is ``random_jitter``, a generator of
groupkit's own.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import attrs

#: Each delay is scaled by a random factor in [1 - JITTER, 1 + JITTER] (Java: 0.2).
JITTER = 0.2
#: How much each consecutive failure multiplies the delay by (Java: 2).
MULTIPLIER = 2
#: The default random source of every back-off's jitter in groupkit: a generator of its own,
#: so the client never moves the global ``random`` state an application may have seeded for a
#: reproducible run (as Java's ExponentialBackoff draws from ThreadLocalRandom, not the
#: application's Random).
random_jitter: Callable[[], float] = random.Random().random


@attrs.frozen
class Backoff:
    """Delays growing from ``initial_ms`` to ``max_ms``.

    ``jitter`` returns a float in [0, 1), like ``random.random`` (default: ``random_jitter``).
    """

    initial_ms: float
    max_ms: float
    jitter: Callable[[], float] = random_jitter

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th consecutive failure (1 for the first).

        ``failures - 1`` is the Java class's ``attempts``.
        """
        if self.max_ms <= self.initial_ms:
            return self.max_ms / 1000.0
        # The exponent stops where the term reaches max_ms, so huge counts cannot overflow.
        top = math.log(self.max_ms / max(self.initial_ms, 1.0), MULTIPLIER)
        term = self.initial_ms * MULTIPLIER ** min(max(failures, 1) - 1, top)
        draw = min(max(self.jitter(), 0.0), 1.0)
        factor = 1.0 - JITTER + 2.0 * JITTER * draw
        return min(term * factor, self.max_ms) / 1000.0
