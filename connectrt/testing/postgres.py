"""A private PostgreSQL server for tests: Debian's ``postgresql`` binaries, a throwaway cluster.

:class:`PostgresServer` finds ``initdb``/``pg_ctl`` (``PATH``, then ``/usr/lib/postgresql/*/bin``),
installs Debian's ``postgresql`` package with ``apt-get`` when they are missing and we are root,
initialises a cluster in a temporary directory on a free loopback port, starts it and removes it
all on ``stop()``. PostgreSQL refuses to run as root, so when the process is root the cluster is
owned by and run as the ``postgres`` user that Debian's package creates.

Lifecycle: ``start()`` once, ``stop()`` once (idempotent), or a context manager; ``restart()``
in between stops and starts the server on its data (clients are disconnected). Not thread-safe.
Use :meth:`create_database` to give each test its own database on the shared server.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping

from connectrt.ports import free_port
from connectrt.service import ManagedService
from connectrt.testing.debian import apt_install, can_apt_install

__all__ = [
    "LOGICAL_REPLICATION",
    "PostgresServer",
    "PostgresUnavailable",
    "ensure_postgres_bin",
    "find_postgres_bin",
]

LOGICAL_REPLICATION: Mapping[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
}
"""``PostgresServer(settings=LOGICAL_REPLICATION)``: a server that logical decoding can read."""

_SUPERUSER = "connectrt"


class PostgresUnavailable(RuntimeError):
    """PostgreSQL binaries are missing and could not be installed."""


def find_postgres_bin() -> str | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(initdb))
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        if os.path.exists(os.path.join(directory, "initdb")):
            return directory
    return None


def _install_postgres() -> None:
    if not can_apt_install():
        raise PostgresUnavailable(
            "PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's "
            "'postgresql' package"
        )
    apt_install("postgresql", PostgresUnavailable)


def ensure_postgres_bin() -> str:
    """The directory of ``initdb`` and ``pg_ctl``, installing Debian's ``postgresql`` package
    first when they are missing (root only); PostgresUnavailable otherwise."""
    found = find_postgres_bin()
    if found is None:
        _install_postgres()
        found = find_postgres_bin()
        if found is None:
            raise PostgresUnavailable("postgresql installed but initdb was not found")
    return found


class PostgresServer(ManagedService):
    """One PostgreSQL cluster on ``127.0.0.1:port`` with a trust-authenticated superuser.

    ``url`` is an SQLAlchemy URL (``postgresql+psycopg://connectrt@127.0.0.1:PORT/postgres``).
    ``settings`` are further server settings (``-c name=value``), e.g. ``{"wal_level":
    "logical"}`` for logical replication (change data capture); see :data:`LOGICAL_REPLICATION`.
    """

    def __init__(
        self,
        *,
        install: bool = True,
        startup_timeout: float = 30.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self._install = install
        self._settings = dict(settings or {})
        self._startup_timeout = startup_timeout
        self._bin: str | None = None
        self._dir: str | None = None
        self._run_as: pwd.struct_passwd | None = None
        self._options = ""
        self.port = 0
        self.user = _SUPERUSER

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> PostgresServer:
        self._bin = find_postgres_bin()
        if self._bin is None:
            if not self._install:
                raise PostgresUnavailable("PostgreSQL server binaries not found")
            self._bin = ensure_postgres_bin()
        if os.geteuid() == 0:
            try:
                self._run_as = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailable("running as root and no 'postgres' user exists") from exc
        self._dir = tempfile.mkdtemp(prefix="connectrt-pg-")
        data = os.path.join(self._dir, "data")
        if self._run_as is not None:
            os.chmod(self._dir, 0o755)
            os.chown(self._dir, self._run_as.pw_uid, self._run_as.pw_gid)
        self.port = free_port()
        self._run(
            [
                os.path.join(self._bin, "initdb"),
                "-D",
                data,
                "-U",
                _SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ]
        )
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self._dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        for name, value in self._settings.items():
            options += f" -c {name}={value}"
        self._options = options
        self._pg_ctl_start()
        return self

    def _pg_ctl_start(self) -> None:
        assert self._dir is not None and self._bin is not None
        self._run(
            [
                os.path.join(self._bin, "pg_ctl"),
                "-D",
                os.path.join(self._dir, "data"),
                "-o",
                self._options,
                "-l",
                os.path.join(self._dir, "server.log"),
                "-w",
                "-t",
                str(int(self._startup_timeout)),
                "start",
            ]
        )
        self._wait_ready()

    def restart(self, *, mode: str = "fast") -> None:
        """Stop the server (``pg_ctl stop -m mode``: ``fast`` disconnects every client,
        ``immediate`` is a crash) and start it again on the same port and data: what a client
        sees when its server restarts. Blocks until the server accepts connections again."""
        if self._dir is None or self._bin is None:
            raise RuntimeError("the server is not running")
        data = os.path.join(self._dir, "data")
        self._run([os.path.join(self._bin, "pg_ctl"), "-D", data, "-m", mode, "-w", "stop"])
        self._pg_ctl_start()

    def stop(self) -> None:
        if self._dir is None or self._bin is None:
            return
        data = os.path.join(self._dir, "data")
        try:
            self._run([os.path.join(self._bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop"])
        except Exception:
            pass
        shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    # ---------------------------------------------------------------- access
    def url(self, database: str = "postgres", *, driver: str = "postgresql+psycopg") -> str:
        """An SQLAlchemy URL for ``database`` on this server."""
        return f"{driver}://{self.user}@127.0.0.1:{self.port}/{database}"

    def jdbc_url(self, database: str = "postgres") -> str:
        """The same server as a ``jdbc:postgresql://`` URL (as Confluent configs carry it)."""
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create database ``name`` (a plain identifier) and return its SQLAlchemy URL."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"database name must be alphanumeric/underscore: {name!r}")
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    # ---------------------------------------------------------------- internals
    def _run(self, argv: list[str]) -> None:
        kwargs: dict[str, object] = {}
        if self._run_as is not None:
            uid, gid = self._run_as.pw_uid, self._run_as.pw_gid

            def demote() -> None:
                os.setgid(gid)
                os.setuid(uid)

            kwargs["preexec_fn"] = demote
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8"
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            cwd=self._dir,
            check=False,
            **kwargs,  # type: ignore[call-overload]
        )
        if result.returncode != 0:
            log = ""
            if self._dir is not None:
                path = os.path.join(self._dir, "server.log")
                if os.path.exists(path):
                    with open(path) as handle:
                        log = handle.read()[-2000:]
            raise PostgresUnavailable(
                f"{os.path.basename(argv[0])} failed ({result.returncode}):\n"
                f"{result.stdout[-1000:]}{result.stderr[-2000:]}{log}"
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._startup_timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise PostgresUnavailable(
                        f"PostgreSQL did not accept connections on {self.port}"
                    ) from None
                time.sleep(0.1)
