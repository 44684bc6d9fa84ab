"""Read-process-write exactly once: consume "orders", write "orders-upper", commit the input
offsets inside the same transaction (KIP-447).

    python examples/exactly_once/read_process_write.py localhost:9092

Each poll's records, their output and their offsets commit together or not at all. A second
copy of this program with the same ``transactional_id`` fences this one (its next call raises
ProducerFencedError); in a group of several copies give each its own transactional id.
"""

from __future__ import annotations

import sys
import uuid

from groupkit import (
    AbortableTransactionError,
    CommitFailedError,
    Consumer,
    Producer,
    ProducerFencedError,
    TopicPartition,
)


def main(bootstrap: str) -> None:
    consumer = Consumer(bootstrap_servers=bootstrap, group_id="upper",
                        enable_auto_commit=False, isolation_level="read_committed",
                        auto_offset_reset="earliest")
    producer = Producer(bootstrap_servers=bootstrap,
                        transactional_id=f"upper-{uuid.uuid4().hex[:8]}")
    consumer.subscribe(["orders"])
    producer.init_transactions()
    try:
        while True:
            records = consumer.poll(1.0)
            if not records:
                continue
            producer.begin_transaction()
            try:
                ends: dict[TopicPartition, int] = {}
                for record in records:
                    producer.send("orders-upper", (record.value or b"").upper(), key=record.key)
                    ends[TopicPartition(record.topic, record.partition)] = record.offset + 1
                producer.send_offsets_to_transaction(ends, consumer.group_metadata())
                producer.commit_transaction()
            except (AbortableTransactionError, CommitFailedError) as exc:
                # Nothing of this poll counts: go back to the committed offsets and redo it.
                print("aborting:", exc, file=sys.stderr)
                producer.abort_transaction()
                committed = consumer.committed(ends)
                for tp in ends:
                    position = committed.get(tp)
                    consumer.seek(tp, position.offset if position is not None else 0)
    except ProducerFencedError:
        print("another copy with this transactional id took over; stopping", file=sys.stderr)
    finally:
        producer.close()
        consumer.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "localhost:9092")
