"""``connectrt``'s help is complete and the copies of it in the docs are true.

Every command says what it does (no docstring markup), every option has help, every argument
is named in its command's help; the help pasted in docs/operators/cli.md after a
``<!-- help: connectrt ... -->`` marker is what that command prints at 80 columns. Tables
are coloured on a terminal and plain when piped.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator

import click
import pytest

from connectrt.cli import main
from connectrt.cli.main import cli
from connectrt.cli.output import print_table
from tests.docs_support import DOCS

CLI_PAGE = DOCS / "operators" / "cli.md"
_HELP_BLOCK = re.compile(r"<!-- help: (connectrt[^>]*?) -->\n```text\n(.*?)```\n", re.S)


def _commands(
    command: click.Command, path: tuple[str, ...] = ("connectrt",)
) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(path), command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(cli))


def test_the_command_tree_is_complete():
    names = {name for name, _ in COMMANDS}
    for expected in (
        "connectrt standalone",
        "connectrt worker",
        "connectrt spark",
        "connectrt broker",
        "connectrt demo",
        "connectrt plugins",
        "connectrt config-docs",
        "connectrt connectors validate",
        "connectrt offsets reset",
        "connectrt dlq replay",
        "connectrt dlq status",
        "connectrt dlq cancel",
        "connectrt auth hash-password",
        "connectrt context add",
        "connectrt context use",
        "connectrt context list",
        "connectrt context current",
        "connectrt completion",
        "connectrt import",
    ):
        assert expected in names


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_option_and_argument_is_explained(name: str, command: click.Command):
    text = command.help or ""
    assert text.strip(), f"{name} has no help"
    assert not re.search(r"``|:mod:|:class:|:func:", text), f"{name}: docstring markup"
    assert len(command.get_short_help_str(60)) <= 60
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts[0]} has no help"
        elif isinstance(param, click.Argument):
            assert param.human_readable_name in text, (
                f"{name}: argument {param.human_readable_name} is not named in its help"
            )


def test_management_commands_take_the_connection_options_and_json():
    for name, command in COMMANDS:
        if name in ("connectrt import", "connectrt tap") or name.startswith(
            ("connectrt connectors ", "connectrt offsets ", "connectrt dlq ")
        ):
            opts = {o for p in command.params for o in p.opts}
            assert {"--url", "--context", "--user", "--token", "--json"} <= opts, name


def _help(args: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main([*args.split()[1:], "--help"]) == 0
    return capsys.readouterr().out


def test_docs_show_the_real_help(capsys: pytest.CaptureFixture[str], monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    pasted = _HELP_BLOCK.findall(CLI_PAGE.read_text(encoding="utf-8"))
    shown = {command for command, _ in pasted}
    assert {"connectrt --help", "connectrt connectors validate --help"} <= shown
    for command, text in pasted:
        assert _help(command.removesuffix(" --help"), capsys) == text, (
            f"docs/operators/cli.md shows stale help for '{command}': paste the output of "
            f"'COLUMNS=80 {command}'"
        )


def test_root_help_describes_connectrt(capsys: pytest.CaptureFixture[str], monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = _help("connectrt", capsys)
    assert "The ``connectrt`` command" not in text
    assert "Run Kafka Connect-style connectors in Python, and manage them." in text
    assert all(len(line) <= 80 for line in text.splitlines())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tables_are_coloured_on_a_terminal_and_plain_when_piped(monkeypatch):
    rows = [["a[bold]", "RUNNING"], ["b", "FAILED"]]
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    print_table(rows, header=["NAME", "STATE"])
    assert piped.getvalue() == "NAME     STATE\na[bold]  RUNNING\nb        FAILED\n"

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    print_table(rows, header=["NAME", "STATE"])
    out = terminal.getvalue()
    assert "\x1b[" in out  # styled
    assert "a[bold]" in out  # a name is text, never markup


def test_a_table_wider_than_the_terminal_is_printed_whole(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("COLUMNS", "30")
    url = "https://connect.example.com:8443"
    print_table([["*", "prod", url, "basic admin (password file)"]], header=["C", "N", "U", "A"])
    plain = re.sub(r"\x1b\[[0-9;]*m", "", terminal.getvalue())
    assert url in plain and "basic admin (password file)" in plain and "prod" in plain
    assert "\u2026" not in plain  # no ellipsis: nothing cut
