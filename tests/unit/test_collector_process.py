"""connectrt.testing.otel_collector.CollectorProcess (the Zipkin collector's and Jaeger's
lifecycle), driven with a stand-in binary: a Python script that serves OTLP/HTTP on the port
its config names."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from connectrt.errors import ConnectError
from connectrt.testing.otel_collector import CollectorProcess

_SERVE = f"""#!{sys.executable}
import http.server, re, sys
config = sys.argv[sys.argv.index("--config") + 1].removeprefix("file:")
text = open(config).read()
print("starting", flush=True)
if "mode: exit" in text:
    sys.exit(3)
if "mode: silent" in text:
    import time
    time.sleep(60)
port = int(re.search(r"http: 127.0.0.1:(\\d+)", text).group(1))

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


class _Error(ConnectError):
    pass


class _Fake(CollectorProcess):
    error = _Error
    label = "the fake"
    log_name = "fake.log"
    config_name = "fake.yaml"
    mode = "serve"

    def _config(self) -> str:
        return f"mode: {self.mode}\nhttp: 127.0.0.1:{self._port}\ngrpc: {self._grpc_port}\n"


def _fake(tmp_path: Path, mode: str) -> _Fake:
    binary = tmp_path / "fake-collector"
    binary.write_text(_SERVE)
    binary.chmod(0o755)
    fake = _Fake(binary, tmp_path, startup_timeout=10.0, stop_timeout=5.0)
    fake.mode = mode
    return fake


def test_starts_on_free_ports_answers_and_stops(tmp_path: Path) -> None:
    fake = _fake(tmp_path, "serve")
    with pytest.raises(_Error, match="has not been started"):
        _ = fake.otlp_http
    with fake:
        assert fake.is_alive()
        assert fake.otlp_http == f"http://127.0.0.1:{fake.port}"
        assert fake.otlp_grpc.startswith("http://127.0.0.1:") and fake.otlp_grpc != fake.otlp_http
        assert httpx.post(f"{fake.otlp_http}/v1/traces", content=b"{}").status_code == 200
        assert (tmp_path / "fake.yaml").read_text().startswith("mode: serve")
        with pytest.raises(_Error, match="already started"):
            fake.start()
    assert not fake.is_alive()
    fake.stop()  # idempotent


def test_an_exit_at_start_is_the_error_with_the_log(tmp_path: Path) -> None:
    fake = _fake(tmp_path, "exit")
    with pytest.raises(_Error, match="the fake exited with status 3: starting"):
        fake.start()


def test_no_answer_in_time_is_the_error_and_leaves_nothing_running(tmp_path: Path) -> None:
    fake = _fake(tmp_path, "silent")
    fake._startup_timeout = 1.0
    with pytest.raises(_Error, match=r"the fake did not answer within 1 s \(last: "):
        fake.start()
    assert not fake.is_alive()
