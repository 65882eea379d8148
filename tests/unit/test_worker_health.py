"""The health check's decisions (KIP-1017): starting, healthy, unhealthy and why."""

from __future__ import annotations

import threading

from connectrt.runtime.worker.health import HerderStages, WorkerHealth, thread_probe

UNHEALTHY = "Worker was unable to handle this request and may be unable to handle other requests."


class _Clock:
    def __init__(self) -> None:
        self.now = 1729827181.123  # 2024-10-25T03:33:01.123Z

    def __call__(self) -> float:
        return self.now


def _health(probes=None, timeout_s=0.2) -> tuple[WorkerHealth, threading.Event, threading.RLock]:
    ready, lock = threading.Event(), threading.RLock()
    return WorkerHealth(ready, lock, HerderStages(_Clock()), probes, timeout_s), ready, lock


def test_stage_summaries_are_kafkas():
    clock = _Clock()
    stages = HerderStages(clock)
    assert stages.summarize() is None
    with stages.stage("creating connector c"):
        with stages.stage("an inner step keeps the outer description"):
            assert stages.summarize() == (
                "The worker is currently creating connector c, which began at "
                "2024-10-25T03:33:01.123Z."
            )
        clock.now += 2.5
    assert stages.summarize() == (
        "The last operation the worker completed was creating connector c, which began at "
        "2024-10-25T03:33:01.123Z and completed at 2024-10-25T03:33:03.623Z."
    )


def test_starting_until_ready_then_healthy():
    health, ready, _ = _health()
    report = health.check()
    assert (report.status, report.message, report.http_status) == (
        "starting",
        "Worker is still starting up.",
        503,
    )
    with health.stages.stage("reading the config and status topics"):
        assert health.check().message == (
            "Worker is still starting up. The worker is currently reading the config and status "
            "topics, which began at 2024-10-25T03:33:01.123Z."
        )
    ready.set()
    report = health.check()
    assert (report.status, report.http_status) == ("healthy", 200)
    assert report.message == "Worker has completed startup and is ready to handle requests."


def test_unhealthy_while_another_thread_holds_the_herder_lock():
    health, ready, lock = _health(timeout_s=0.3)
    ready.set()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock, health.stages.stage("stopping connector c"):
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        report = health.check()
        assert (report.status, report.http_status) == ("unhealthy", 500)
        assert report.message == (
            f"{UNHEALTHY} The worker is currently stopping connector c, which began at "
            "2024-10-25T03:33:01.123Z."
        )
    finally:
        release.set()
        holder.join(10)
    assert health.check().status == "healthy"


def test_every_failing_probe_is_reported_and_a_raising_probe_is_a_finding():
    alive = {"reconfig": True}

    def kafka(timeout_s: float) -> str | None:
        return "Kafka at b:9092 did not answer."

    def broken(timeout_s: float) -> str | None:
        raise RuntimeError("boom")

    health, ready, _ = _health(
        {"worker": thread_probe("reconfiguration thread", lambda: alive["reconfig"])}
    )
    ready.set()
    assert health.check().status == "healthy"
    alive["reconfig"] = False
    health.add_probe("kafka", kafka)
    health.add_probe("odd", broken)
    report = health.check()
    assert report.status == "unhealthy"
    assert report.message == (
        f"{UNHEALTHY} The reconfiguration thread is not running. Kafka at b:9092 did not "
        "answer. The odd check failed: RuntimeError: boom"
    )
