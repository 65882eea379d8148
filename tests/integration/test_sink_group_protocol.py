"""Sink tasks on either consumer group protocol: classic and KIP-848's ``group.protocol=consumer``.

A sink connector created over real HTTP on a real worker consumes a 4-partition topic while
records flow, with ``consumer.override.group.protocol`` set to ``classic`` or ``consumer``, and
goes through two rebalances: ``tasks.max`` raised from 1 to 2 (PUT config; the new task takes
partitions from the first) and task 0 restarted (POST .../tasks/0/restart; its partitions go
to task 1 and come back). The worker's consumers carry ``session.timeout.ms`` and
``heartbeat.interval.ms`` (the test worker's defaults), which librdkafka refuses with the
consumer protocol: the runtime must leave them out.

Both protocols must end the same way: no record lost; every duplicate a redelivery from a
partition's committed offset at a handover (the bound comes from the committed offsets the
tasks resumed from, which must not be older than those committed before the rebalance); the
SinkTask contract kept through incremental rebalances (``open``/``close`` with only the
partitions added/removed, ``put`` only for open partitions); and the connector's consumer
group's committed offsets equal to the topic's end offsets.

A second test makes the partition move deterministic: while task 0 runs alone, a plain
consumer in a process of its own joins the connector's group and takes partitions from it, then
leaves (SIGTERM: it closes) or dies (SIGKILL: the group reassigns its partitions once its session
times out). On the consumer protocol the running task must close (after committing) only the
partitions taken and open only those given back; on the classic protocol's eager assignor it
closes and reopens everything. Either way the partitions resume from task 0's commits.

The embedded broker cannot serve KIP-848 consumers (they receive nothing), so when the session
broker is the embedded one the ``consumer`` case starts its own Apache Kafka
(:class:`connectrt.testing.kafka_broker.KafkaBroker`: Java 17+, Maven the first time).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connectrt.testing.broker_choice import SessionBroker, apache_kafka
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for
from tests.plugins.rebalance_log_sink import LOCK, LOGS, RebalanceLog

pytestmark = pytest.mark.integration

Names = Callable[[str], str]

PARTITIONS = 4
ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 150  # records flow for about ROUNDS * _ROUND_PAUSE_S seconds
PER_ROUND = 8  # records per round, two per partition
_ROUND_PAUSE_S = 0.1


@pytest.fixture(scope="module")
def kip848_broker(broker: SessionBroker) -> Iterator[SessionBroker]:
    """The broker of the ``consumer`` case: the session's, unless that is the embedded broker
    (KIP-848 consumers receive nothing from it); then an Apache Kafka started for this module."""
    with apache_kafka(broker) as kafka:
        yield kafka


class _Flow:
    """Produces ROUNDS rounds of records (PER_ROUND per round, round-robin over the
    partitions) on a thread; ``end_offsets`` come from the delivery reports."""

    def __init__(self, bootstrap: str, topic: str, rounds: int = ROUNDS) -> None:
        self._rounds = rounds
        self._producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        self._topic = topic
        self.end_offsets: dict[int, int] = defaultdict(int)
        self.failures: list[str] = []
        self.thread = threading.Thread(target=self._run, name="records-flow", daemon=True)

    def _delivered(self, err: object, msg: object) -> None:
        if err is not None:
            self.failures.append(str(err))
            return
        partition, offset = msg.partition(), msg.offset()  # type: ignore[attr-defined]
        self.end_offsets[partition] = max(self.end_offsets[partition], offset + 1)

    def _run(self) -> None:
        n = 0
        for _ in range(self._rounds):
            for _ in range(PER_ROUND):
                self._producer.produce(
                    self._topic,
                    f"r{n}".encode(),
                    partition=n % PARTITIONS,
                    on_delivery=self._delivered,
                )
                n += 1
            self._producer.poll(0)
            time.sleep(_ROUND_PAUSE_S)
        if self._producer.flush(60) != 0:
            self.failures.append("records still unsent after 60 s")

    @property
    def total(self) -> int:
        return self._rounds * PER_ROUND


def _committed(admin: AdminClient, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset per partition (0 where none)."""
    request = ConsumerGroupTopicPartitions(
        group, [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
    )
    result = admin.list_consumer_group_offsets([request])[group].result(60)
    return {tp.partition: max(tp.offset, 0) for tp in result.topic_partitions}


def _fail_on_failed_task(http: httpx.Client, name: str) -> None:
    """Fail the test at once, with the task's trace, if a task of ``name`` is FAILED."""
    response = http.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return  # not created yet
    for task in response.json().get("tasks", []):
        if task["state"] == "FAILED":
            pytest.fail(f"task {task['id']} FAILED:\n{task.get('trace', '')}")


def _wait(predicate: Callable[[], bool], timeout: float, what: str, log: RebalanceLog) -> None:
    """``wait_for`` whose timeout error also says which task instance holds which partitions."""
    try:
        wait_for(predicate, timeout, what)
    except TimeoutError as e:
        with LOCK:
            opened, closed = dict(log.opened), dict(log.closed)
        raise AssertionError(f"{e}; open() calls {opened}, close() calls {closed}") from None


def _instances_holding(log: RebalanceLog) -> dict[str, set[int]]:
    """Task instance -> partitions it has open now."""
    with LOCK:
        return {name: set(held) for name, held in log.holding.items()}


def _duplicates_within_resume_windows(log: RebalanceLog) -> tuple[int, int, list[str]]:
    """(duplicates, their bound, problems). Per partition, each resume point r (the first
    offset a task instance got after opening it, i.e. the committed offset it started from)
    allows redelivery of [r, highest offset delivered before it]; every duplicate must be
    such a redelivery, so their count is bounded by the sum of those windows."""
    seen: dict[int, set[int]] = defaultdict(set)
    highest: dict[int, int] = defaultdict(lambda: -1)
    windows: dict[int, list[tuple[int, int]]] = defaultdict(list)
    resumes = {index: (p, r) for index, p, r in log.resumes}
    duplicates, bound, problems = 0, 0, []
    for index, (partition, offset, name) in enumerate(log.deliveries):
        if index in resumes:
            p, r = resumes[index]
            if highest[p] >= r:
                windows[p].append((r, highest[p]))
                bound += highest[p] + 1 - r
        if offset in seen[partition]:
            duplicates += 1
            if not any(lo <= offset <= hi for lo, hi in windows[partition]):
                problems.append(f"{name} got offset {offset} of partition {partition} again")
        seen[partition].add(offset)
        highest[partition] = max(highest[partition], offset)
    return duplicates, bound, problems


@dataclass
class _Setup:
    """What each test starts from: a broker speaking ``protocol`` (the KIP-848 one for
    ``consumer``), a topic of :data:`PARTITIONS` partitions, the connector's name, group and
    config, and the rebalance log its task writes."""

    protocol: str
    bootstrap: str
    topic: str
    name: str
    admin: AdminClient
    log_id: str

    @classmethod
    def of(
        cls,
        protocol: str,
        broker: SessionBroker,
        request: pytest.FixtureRequest,
        unique_name: Names,
        prefix: str,
    ) -> _Setup:
        chosen = request.getfixturevalue("kip848_broker") if protocol == "consumer" else broker
        bootstrap = chosen.bootstrap_servers
        topic = unique_name(prefix)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        created = admin.create_topics(
            [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]
        )
        created[topic].result(60)
        return cls(
            protocol, bootstrap, topic, unique_name(f"{prefix}-sink"), admin, unique_name("log")
        )

    def parts(self) -> tuple[str, str, str, str, AdminClient, RebalanceLog]:
        """``(bootstrap, topic, name, group, admin, log)``."""
        return self.bootstrap, self.topic, self.name, self.group, self.admin, self.log

    @property
    def group(self) -> str:
        return f"connect-{self.name}"

    @property
    def log(self) -> RebalanceLog:
        return LOGS[self.log_id]

    @property
    def config(self) -> dict[str, str]:
        return {
            "connector.class": "tests.plugins.rebalance_log_sink.RebalanceLogSink",
            "topics": self.topic,
            "tasks.max": "1",
            "log.id": self.log_id,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "consumer.override.group.protocol": self.protocol,
        }


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_sink_delivers_and_commits_the_same_on_both_group_protocols(
    protocol: str, broker: SessionBroker, request: pytest.FixtureRequest, unique_name: Names
) -> None:
    setup = _Setup.of(protocol, broker, request, unique_name, "gp")
    bootstrap, topic, name, group, admin, log = setup.parts()
    config = setup.config
    worker: RestWorker = start_rest_worker(bootstrap)
    flow = _Flow(bootstrap, topic)
    try:
        http = worker.http
        response = http.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
        flow.thread.start()

        def delivered() -> int:
            with LOCK:
                return len(log.deliveries)

        def first_records() -> bool:
            _fail_on_failed_task(http, name)
            return delivered() >= 200

        _wait(first_records, 120, "task 0 to deliver its first 200 records", log)
        assert flow.thread.is_alive(), "records stopped flowing before the first rebalance"

        # Rebalance 1: a second task joins while records flow.
        committed_before_add = _committed(admin, group, topic)
        mark_add = delivered()
        response = http.put(f"/connectors/{name}/config", json={**config, "tasks.max": "2"})
        assert response.status_code == 200, response.text

        def both_tasks_hold_partitions() -> bool:
            _fail_on_failed_task(http, name)
            held = _instances_holding(log)
            return all(
                any(n.startswith(f"task-{i}#") and ps for n, ps in held.items()) for i in (0, 1)
            )

        _wait(both_tasks_hold_partitions, 180, "tasks 0 and 1 to share the partitions", log)

        # Rebalance 2: task 0 restarted (its partitions go away and come back).
        committed_before_restart = _committed(admin, group, topic)
        mark_restart = delivered()
        old_task0 = {n for n in _instances_holding(log) if n.startswith("task-0#")}
        response = http.post(f"/connectors/{name}/tasks/0/restart")
        assert response.status_code == 204, response.text

        def restarted_task0_holds_partitions() -> bool:
            _fail_on_failed_task(http, name)
            held = _instances_holding(log)
            return any(
                n.startswith("task-0#") and n not in old_task0 and ps for n, ps in held.items()
            )

        _wait(restarted_task0_holds_partitions, 180, "the restarted task 0 to get partitions", log)
        flow.thread.join(120)
        assert not flow.thread.is_alive(), "the producer did not finish within 120 s"
        assert not flow.failures, flow.failures
        ends = dict(flow.end_offsets)
        assert sum(ends.values()) == flow.total

        wait_for(
            lambda: _all_delivered(log, ends), 180, f"all {flow.total} records to be delivered"
        )
        wait_for(
            lambda: _committed(admin, group, topic) == ends,
            120,
            f"the group's committed offsets to reach the end offsets {ends}",
        )
        if protocol == "consumer":
            # The group really is a KIP-848 group (a classic one would say CLASSIC).
            described = admin.describe_consumer_groups([group])[group].result(60)
            assert described.type.name == "CONSUMER", described.type

        statuses = http.get(f"/connectors/{name}/status").json()
        assert [t["state"] for t in statuses["tasks"]] == ["RUNNING", "RUNNING"], statuses
        with LOCK:
            violations = list(log.violations)
            duplicates, bound, problems = _duplicates_within_resume_windows(log)
            resumes = list(log.resumes)
            delivered_total = len(log.deliveries)
        assert not violations, violations
        assert not problems, problems
        assert duplicates <= bound
        assert delivered_total == flow.total + duplicates
        # A task resumed a partition from a committed offset at least as recent as the one
        # committed before the rebalance that moved it: redelivery never reaches further back.
        for index, partition, offset in resumes:
            if index >= mark_restart:
                floor = committed_before_restart[partition]
            elif index >= mark_add:
                floor = committed_before_add[partition]
            else:
                floor = 0  # task 0's first assignment, before anything was committed
            assert floor <= offset <= ends[partition], (index, partition, offset, floor)
        assert any(index >= mark_add and offset > 0 for index, _, offset in resumes), (
            "no partition changed hands mid-stream: the rebalances were not exercised",
            resumes,
        )
    finally:
        worker.delete_connectors()
        worker.stop()
        LOGS.pop(setup.log_id, None)


def _all_delivered(log: RebalanceLog, ends: dict[int, int]) -> bool:
    with LOCK:
        got = {(p, o) for p, o, _ in log.deliveries}
    return all((p, o) in got for p, end in ends.items() for o in range(end))


class _Member:
    """:mod:`tests.plugins.group_member` in a child process: another member of a group, whose
    latest assignment (``held``) is read from its output by a thread."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        self.held: list[int] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.plugins.group_member", bootstrap, group, topic, protocol],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, name="member-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.held = json.loads(line)

    def end(self, how: int) -> None:
        """Send ``how`` (SIGTERM: it leaves the group; SIGKILL: it dies in it) and reap it."""
        if self.process.poll() is None:
            self.process.send_signal(how)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.mark.parametrize("ending", ["leaves", "is_killed"])
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_running_task_gives_up_and_gets_back_only_what_another_member_takes(
    protocol: str,
    ending: str,
    broker: SessionBroker,
    request: pytest.FixtureRequest,
    unique_name: Names,
) -> None:
    setup = _Setup.of(protocol, broker, request, unique_name, "gp-steal")
    bootstrap, topic, name, group, admin, log = setup.parts()
    worker: RestWorker = start_rest_worker(bootstrap)
    intruder: _Member | None = None
    try:
        http = worker.http
        config = setup.config
        response = http.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
        first = _Flow(bootstrap, topic, rounds=25)
        first.thread.start()
        first.thread.join(120)
        assert not first.failures, first.failures
        ends = dict(first.end_offsets)

        def first_delivered() -> bool:
            _fail_on_failed_task(http, name)
            return _all_delivered(log, ends)

        _wait(first_delivered, 120, "task 0 to deliver the first records", log)
        (task0,) = _instances_holding(log)

        # Another member (a process of its own) joins the connector's group, on the same
        # protocol, and takes partitions from task 0.
        intruder = _Member(bootstrap, group, topic, protocol)
        member = intruder

        def partitions_moved() -> bool:
            assert member.process.poll() is None, "the other member exited"
            return bool(member.held) and len(_instances_holding(log)[task0]) < PARTITIONS

        _wait(partitions_moved, 120, "the other member to take partitions from task 0", log)
        taken = set(intruder.held)
        assert _instances_holding(log)[task0] == set(range(PARTITIONS)) - taken

        # More records while it holds them; then it leaves (or dies: the group finds out when
        # its session times out) and task 0 gets them back.
        second = _Flow(bootstrap, topic, rounds=25)
        second.thread.start()
        second.thread.join(120)
        assert not second.failures, second.failures
        intruder.end(signal.SIGTERM if ending == "leaves" else signal.SIGKILL)
        intruder = None
        ends = {p: max(ends.get(p, 0), e) for p, e in second.end_offsets.items()}

        def all_back() -> bool:
            _fail_on_failed_task(http, name)
            return _all_delivered(log, ends) and _instances_holding(log)[task0] == set(
                range(PARTITIONS)
            )

        _wait(all_back, 180, "task 0 to get every partition back and deliver everything", log)
        wait_for(
            lambda: _committed(admin, group, topic) == ends,
            120,
            f"the group's committed offsets to reach the end offsets {ends}",
        )
        with LOCK:
            violations = list(log.violations)
            instances = set(log.holding)
            opened = list(log.opened[task0])
            closed = list(log.closed[task0])
            duplicates, bound, problems = _duplicates_within_resume_windows(log)
        assert not violations, violations
        assert not problems, problems
        assert duplicates <= bound
        assert instances == {task0}, "task 0 was restarted instead of rebalanced"
        if protocol == "consumer":
            # Incremental: only the partitions taken were closed, and only they reopened.
            assert [set(c) for c in closed] == [taken], closed
            assert [set(o) for o in opened] == [set(range(PARTITIONS)), taken], opened
        else:
            # Eager: every rebalance revokes everything, and assigns the whole new assignment.
            assert closed and set(closed[0]) == set(range(PARTITIONS)), closed
            assert set(opened[-1]) == set(range(PARTITIONS)), opened
    finally:
        if intruder is not None:
            intruder.end(signal.SIGKILL)
        worker.delete_connectors()
        worker.stop()
        LOGS.pop(setup.log_id, None)
