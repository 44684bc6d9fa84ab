"""A share-group member in a process of its own that takes records and never acknowledges
them, for the test that SIGKILLs it: ``python -m tests.support.share_holder BOOTSTRAP GROUP
TOPIC``. It prints ``joined`` once it holds partitions, then one ``held PARTITION OFFSET`` line
per record it got (flushed), and keeps heartbeating until killed."""

from __future__ import annotations

import sys
import time

from groupkit import ShareConsumer


def main() -> None:
    bootstrap, group, topic = sys.argv[1:4]
    consumer = ShareConsumer(bootstrap_servers=bootstrap, group_id=group, client_id="holder",
                             share_acknowledgement_mode="explicit", fetch_max_wait_ms=100)
    consumer.subscribe([topic])
    while not consumer.assignment():
        consumer.poll(0.1)
    print("joined", flush=True)
    records: list = []
    while not records:
        records = consumer.poll(0.1)
    for r in records:
        print("held", r.partition, r.offset, flush=True)
    while True:  # never acknowledged, never polled again: the locks stay until it dies
        time.sleep(1)


if __name__ == "__main__":
    main()
