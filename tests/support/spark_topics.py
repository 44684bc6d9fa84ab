"""Writing test topics for the Spark tests: many small record batches per partition."""

from __future__ import annotations

from groupkit import Producer


def write(servers: str, topic: str, partitions: int, batches: int, per_batch: int,
          first: int = 0) -> None:
    """Each batch flushed on its own, so every partition holds ``batches`` record batches."""
    with Producer(bootstrap_servers=servers, linger_ms=0) as producer:
        n = first
        for _ in range(batches):
            futures = [producer.send(topic, f"{p}-{n + i}".encode(), key=f"k{i}".encode(),
                                     partition=p, headers=[("h", b"v")])
                       for p in range(partitions) for i in range(per_batch)]
            producer.flush(30)
            for f in futures:
                f.result(30)
            n += per_batch
