"""``connectrt`` management subcommands: talk to a running worker's REST API.

* ``connectrt connectors list | get | create -f FILE | update NAME -f FILE | delete | status |
  pause | resume | stop | restart [--include-tasks] [--only-failed] | tasks | offsets``
* ``connectrt offsets reset NAME --to-earliest | --to-latest | --to-datetime T | --to-offset N
  [--topic T]``
* ``connectrt dlq replay --connector NAME [--from T] [--to T] [--dry-run] | status | cancel``
* ``connectrt auth hash-password [USER]`` and ``connectrt auth hash-token``: lines for the
  worker's ``rest.auth.credentials.file`` / ``rest.auth.tokens.file``

Every command talking to a worker takes ``--url`` (env ``CONNECTRT_URL``, default
``http://localhost:8083``), ``--user USER:PASS`` (``CONNECTRT_USER``), ``--token``
(``CONNECTRT_TOKEN``), ``--insecure`` / ``--cacert FILE`` and ``--json`` (print the server's
JSON answer as is, for scripts). A server error prints ``error: <message> (HTTP <status>)``,
an unreachable worker ``error: cannot reach <url>: ...``; both exit with status 1.

Each command group has its module (:mod:`.connector_commands`, :mod:`.offset_commands`,
:mod:`.dlq_commands`, :mod:`.auth_commands`); :mod:`.remote` runs a command against the worker
and :mod:`.output` formats what the commands print.
"""

from __future__ import annotations

from typing import Any

from connectrt.cli.auth_commands import add_auth_commands
from connectrt.cli.connector_commands import add_connector_commands
from connectrt.cli.dlq_commands import add_dlq_commands
from connectrt.cli.offset_commands import add_offset_commands
from connectrt.cli.remote import common_options

__all__ = ["add_management_commands"]


def add_management_commands(subparsers: Any) -> None:
    """Add ``connectors``, ``offsets``, ``dlq`` and ``auth`` to the ``connectrt`` parser's
    subcommands."""
    common = common_options()
    add_connector_commands(subparsers, common)
    add_offset_commands(subparsers, common)
    add_dlq_commands(subparsers, common)
    add_auth_commands(subparsers)
