"""One way out for every command: `--json` or a human form, and one error exit.

A command decorated with `@command_output` returns an `Output`; the decorator
adds `--json`, prints the payload as JSON or calls the renderer, and turns
the project's errors into one line on stderr with exit code 2 (a traceback
only with `--debug`), as pyiceberg's CLI does with its `catch_exception`.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from metadata import FileSlice, HudiBridgeError
from metadata.storage.secrets import redact

# Control characters (ANSI escapes, a terminal title's OSC, BEL) that a table's names may hold are shown, never sent.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Text with its control characters written as `\\xNN` (tabs and newlines kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown(name: str) -> str:
    """A name from a table (a partition, a file, a column) as rich prints it: markup escaped, controls shown."""
    return escape(terminal_safe(name))


class _SafeConsole(Console):
    """Rich's console, with control characters in every printed string shown rather than sent."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(terminal_safe(o) if isinstance(o, str) else o for o in objects), **kwargs)


# A long line is the terminal's to wrap: paths are never broken by us. No highlighting: rich's highlighter runs
# regexes over every printed string, which a 100,000-character name from a hostile table makes take minutes.
console = _SafeConsole(soft_wrap=True, highlight=False)
OWN_PACKAGES = frozenset({"metadata", "expressions", "listers", "hive_sync", "engine_bridge", "bench"})
ERROR_EXIT = 2


@dataclass(frozen=True)
class Output:
    payload: Any  # what --json prints
    render: Callable[[], None]  # the human-readable form
    exit_code: int = 0


def json_requested() -> bool:
    """True inside a command run with --json (for progress bars and prompts)."""
    return bool(click.get_current_context().meta.get("hudi_bridge.json", False))


def progress(message: str) -> None:
    """A progress line on stderr, unless --json was asked for."""
    if not json_requested():
        click.echo(message, err=True)


def key_values(pairs: Sequence[str], option: str) -> dict[str, str]:
    """`KEY=VALUE` option values as a dict (a usage error names the option)."""
    found = {}
    for number, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():  # its text may be a pasted secret: named by position, never shown
            raise click.BadParameter(f"the {_ordinal(number)} one is not KEY=VALUE (its text is not shown: it may be a secret)",
                                     param_hint=option)
        found[key.strip()] = value
    return found


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def strict_requested() -> bool:
    """--strict: a damaged metadata table is an error, not a fallback."""
    return bool(click.get_current_context().meta.get("hudi_bridge.strict", False))


def debug_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("hudi_bridge.debug", False))


def fail(exc: BaseException, line: str | None = None) -> None:
    """Exit with one line naming the problem (`line`, else the exception's
    text), after the traceback with --debug (the exit code is the same);
    secrets masked."""
    if debug_requested():
        click.echo(redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__))).rstrip(), err=True)
    click.echo(terminal_safe(redact(f"error: {line if line is not None else exc}")), err=True)
    sys.exit(ERROR_EXIT)


class _StderrHandler(logging.Handler):
    """Warnings (and with --debug, debug records) on stderr, beside --json on stdout."""

    def __init__(self, debug: bool) -> None:
        super().__init__(logging.DEBUG if debug else logging.WARNING)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s" if debug else "%(levelname)s: %(message)s"))

    def filter(self, record: logging.LogRecord) -> bool:
        # Other libraries' records (thrift's connection tracebacks, py4j) only with --debug:
        # their errors reach the user as the one line the command prints.
        return self.level == logging.DEBUG or record.name.split(".", 1)[0] in OWN_PACKAGES

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(terminal_safe(redact(self.format(record).replace("WARNING:", "warning:", 1))), err=True)


def command_output(func: Callable[..., Output]) -> Callable[..., None]:
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @functools.wraps(func)
    def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> None:
        click.get_current_context().meta["hudi_bridge.json"] = as_json
        handler = _StderrHandler(debug_requested())
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            output = func(*args, **kwargs)
        except (HudiBridgeError, OSError) as exc:
            fail(exc)
            return
        except click.ClickException:
            raise  # usage errors: click prints them
        except Exception as exc:  # a bug: still one line, the traceback with --debug
            hint = "" if debug_requested() else " (run with --debug for the traceback)"
            # One line: a Java error's text goes on with its stack, after py4j's "An error occurred while calling o69.save."
            lines = [line.strip().lstrip(": ") for line in str(exc).splitlines() if line.strip()]
            first = next((line for line in lines if not line.startswith("An error occurred while calling")), lines[0] if lines else "")
            fail(exc, f"unexpected {type(exc).__name__}: {first}{hint}")
            return
        finally:
            root.removeHandler(handler)
        if as_json:
            click.echo(redact(json.dumps(output.payload, indent=2, default=str)))
        else:
            output.render()
        if output.exit_code:
            sys.exit(output.exit_code)

    return wrapper


def print_table(title: str, rows: Sequence[dict[str, Any]], empty: str = "none") -> None:
    """Rows as a table when it fits the terminal, else one `key: value` line
    per value: paths and instants are never cut or broken; no rows is one line."""
    if not rows:
        console.print(f"{title}: {empty}", soft_wrap=True, highlight=False)
        return
    cells = [[_cell(v) for v in row.values()] for row in rows]
    keys = list(rows[0])
    widths = [max(len(key), *(len(line) for row in cells for line in row[n].splitlines() or [""])) for n, key in enumerate(keys)]
    if sum(widths) + 3 * len(widths) + 1 <= console.width:
        table = Table(title=title, title_justify="left")
        for key in keys:
            table.add_column(key, no_wrap=True)
        for row in cells:
            table.add_row(*(Text(terminal_safe(cell)) for cell in row))  # Text: a name's brackets are not markup
        console.print(table)
        return
    lines = [f"{title}: {len(rows)}"]
    for row in cells:
        for n, (key, value) in enumerate(zip(keys, row)):
            parts = value.splitlines() or [""]
            lines.append(f"{'- ' if n == 0 else '  '}{key}: {parts[0]}".rstrip())
            lines += [f"    {part}" for part in parts[1:]]
    for line in lines:
        console.print(line, soft_wrap=True, highlight=False, markup=False)


def _cell(value: Any) -> str:
    return "\n".join(value) if isinstance(value, list) else "" if value is None else str(value)


def slice_rows(slices: Sequence[FileSlice]) -> list[dict[str, Any]]:
    """Names rather than paths, so the table fits a terminal."""
    return [
        {
            "partition": s.partition or '""',
            "base_instant": s.base_instant,
            "base_file": s.base_file_name,
            "log_files": s.log_file_names,
            "bytes": s.total_size,
        }
        for s in slices
    ]


def print_lines(lines: Sequence[str]) -> None:
    """Lines as they are (names in them are not markup): the terminal wraps a long one, nothing breaks a path."""
    for line in lines:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
