"""A plain consumer that joins a consumer group from its own process, for rebalance tests.

``python -m tests.plugins.group_member BOOTSTRAP GROUP TOPIC PROTOCOL`` subscribes to TOPIC in
GROUP on the group protocol PROTOCOL (``classic`` or ``consumer``) and polls until it is told
to stop, printing its assignment (a JSON list of partition numbers) on a line of its own each
time it changes. It never commits: the partitions it held resume, in whichever member gets them
next, from the offsets their previous owner committed.

SIGTERM makes it leave the group cleanly (``close()``); SIGKILL leaves the group to find out
by the member's session timing out (6 s on the classic protocol; the broker's
``group.consumer.session.timeout.ms`` on the consumer protocol).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from types import FrameType

from confluent_kafka import Consumer


def main(argv: list[str]) -> None:
    bootstrap, group, topic, protocol = argv
    stop = threading.Event()

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    classic = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **(classic if protocol == "classic" else {}),
        }
    )
    consumer.subscribe([topic])
    printed: list[int] | None = None
    try:
        while not stop.is_set():
            consumer.poll(0.2)  # serves its rebalances; what it reads is never committed
            held = sorted(tp.partition for tp in consumer.assignment())
            if held != printed:
                print(json.dumps(held), flush=True)
                printed = held
    finally:
        consumer.close()


if __name__ == "__main__":
    main(sys.argv[1:])
