"""The ``connectrt`` command's help: every command and option explained, no docstring markup,
usage errors exit 2."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from connectrt.cli import main
from connectrt.cli.main import cli


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        yield " ".join((*path, name)), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


COMMANDS = dict(_commands(cli))


def test_the_tree_has_the_management_commands() -> None:
    for name in (
        "connectors validate",
        "connectors create",
        "offsets reset",
        "context add",
        "context use",
        "completion",
        "auth hash-password",
        "standalone",
    ):
        assert name in COMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_and_option_has_help(name: str) -> None:
    command = COMMANDS[name]
    assert command.help and "``" not in command.help, name
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"connectrt {name} {param.opts[0]} has no help"


def test_root_help_reads_as_prose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and "The ``connectrt`` command" not in out
    assert "connectrt: a Kafka Connect-compatible connector runtime" in out
    assert main(["connectors", "validate", "--help"]) == 0
    sub = capsys.readouterr().out
    assert "-f, --file FILE" in sub and "CONNECTRT_URL" in sub


def test_usage_errors_exit_2_and_versions_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    assert "No such command" in capsys.readouterr().err
    assert main(["connectors", "create"]) == 2  # -f is required
    assert "Missing option" in capsys.readouterr().err
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("connectrt ")


def test_the_help_shown_in_the_docs_is_current(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/operators/cli.md pastes ``--help`` outputs after ``<!-- help: COMMAND -->`` lines;
    each must be what the command prints at 100 columns (paste the new one when it changes)."""
    import re
    from pathlib import Path

    monkeypatch.setenv("COLUMNS", "100")
    page = Path(__file__).parents[2] / "docs" / "operators" / "cli.md"
    blocks = re.findall(r"<!-- help: ([^>]+) -->\n```text\n(.*?)\n```", page.read_text(), re.S)
    assert len(blocks) >= 2
    for command, shown in blocks:
        words = command.split()[1:]
        capsys.readouterr()
        assert main([*words, "--help"]) == 0
        assert capsys.readouterr().out.rstrip("\n") == shown, f"{command} --help changed"
