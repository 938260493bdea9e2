"""docs/cli.md, the command-line reference, generated from the parser (chperf/parser.py).

`python -m chperf.reference` prints it; `python -m chperf.reference --write` writes
docs/cli.md. tests/unit/test_docs.py fails when the file and the parser disagree, so a CLI
change and its documentation land in the same commit.

The output depends on the parser alone: usage lines are wrapped at a fixed width, never at
the terminal's (argparse otherwise reads $COLUMNS).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from chperf.parser import build_parser

CLI_MD = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

# Usage lines are wrapped here, whatever the terminal: the file must not depend on who
# generated it. 88 keeps them readable in a Markdown code block on GitHub.
USAGE_WIDTH = 88

HEADER = (
    "Generated from `chperf/parser.py` by `python -m chperf.reference --write`; "
    "do not edit by hand."
)


def render_reference() -> str:
    """The whole reference: a title, the global options, then one section per subcommand."""
    parser = build_parser()
    lines = ["# chperf command line", "", HEADER, ""]
    if parser.description:
        lines += [parser.description, ""]
    lines += _section("chperf", None, parser)
    for name, help_text, sub in _subcommands(parser):
        lines += _section(f"chperf {name}", help_text, sub)
    return "\n".join(lines).rstrip("\n") + "\n"


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str | None, argparse.ArgumentParser]]:
    """(name, help line, parser) of every subcommand, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


def _section(title: str, help_text: str | None, parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"## `{title}`", ""]
    if help_text:
        lines += [_sentence(help_text), ""]
    lines += ["```text", _usage(parser).rstrip("\n"), "```", ""]
    rows = [_row(parser, action) for action in _documented(parser)]
    if rows:
        lines += ["| argument | default | meaning |", "| --- | --- | --- |", *rows, ""]
    for group in parser._mutually_exclusive_groups:
        names = ", ".join(f"`{a.option_strings[-1]}`" for a in group._group_actions)
        lines += [f"{'Exactly' if group.required else 'At most'} one of {names}.", ""]
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help()


def _documented(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Every argument but --help and the subcommand switch (its commands get sections)."""
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        yield action


def _row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    argument = f"`{_invocation(parser, action)}`"
    if isinstance(action, argparse._AppendAction):
        argument += " (repeatable)"
    if action.required and action.option_strings:
        argument += " (required)"
    meaning = _help(parser, action)
    return f"| {_cell(argument)} | {_cell(_default(action))} | {_cell(meaning)} |"


def _invocation(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The argument as --help shows it: `--runs RUNS`, `-v, --verbose`, `paths ...`."""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    if action.option_strings:
        return formatter._format_action_invocation(action)
    return formatter._format_args(action, action.dest)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=USAGE_WIDTH)
    return formatter._expand_help(action)


def _default(action: argparse.Action) -> str:
    """The default as a user would type it; empty when there is nothing to show (None, an
    empty list, a flag's False, an argument that is required)."""
    value = action.default
    if action.required or value is None or value is False or value == []:
        return ""
    if value == argparse.SUPPRESS:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(f"`{item}`" for item in value)
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def main(argv: Sequence[str] | None = None) -> int:
    cli = argparse.ArgumentParser(
        prog="python -m chperf.reference", description="the CLI reference, docs/cli.md"
    )
    cli.add_argument("--write", action="store_true", help=f"write {CLI_MD} instead of stdout")
    args = cli.parse_args(argv)
    text = render_reference()
    if args.write:
        CLI_MD.parent.mkdir(parents=True, exist_ok=True)
        CLI_MD.write_text(text, encoding="utf-8")
        print(f"wrote {CLI_MD}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
