"""``free_port``: below the kernel's ephemeral range, skipping taken ports, with the kernel's
choice where no span lies below the range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from connectrt import ports
from connectrt.ports import ephemeral_start, free_port


def test_a_port_is_chosen_below_the_ephemeral_range_and_binds() -> None:
    chosen = {free_port() for _ in range(50)}
    assert all(20000 <= port < min(ephemeral_start(), 32768) for port in chosen)
    assert len(chosen) > 40  # random: test processes side by side rarely choose alike
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", chosen.pop()))


def test_a_taken_port_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        monkeypatch.setattr(ports, "_LOWEST", 0)
        picks = iter([taken.getsockname()[1], 23456])
        monkeypatch.setattr(ports._CHOOSER, "randrange", lambda *_: next(picks))
        assert free_port() == 23456
    finally:
        taken.close()


def test_the_running_kernels_range_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("25000\t60999\n", "ascii")
    monkeypatch.setattr(ports, "_RANGE_FILE", range_file)
    assert ephemeral_start() == 25000
    assert all(20000 <= free_port() < 25000 for _ in range(20))
    range_file.write_text("garbage\n", "ascii")
    assert ephemeral_start() == 32768
    range_file.unlink()
    assert ephemeral_start() == 32768


def test_without_a_span_below_the_range_the_kernel_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("20500 60999\n", "ascii")  # 500 ports below: too few
    monkeypatch.setattr(ports, "_RANGE_FILE", range_file)
    port = free_port()
    assert port >= 20500  # from the kernel's range (this machine's, not the file's)
