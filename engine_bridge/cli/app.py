"""The `hudi-bridge` command group."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from engine_bridge.cli.output import key_values
from metadata.storage.calls import DEFAULT_TIMEOUT_SECONDS, set_default_timeout
from metadata.storage.options import set_default_storage_options

# Command -> the module of engine_bridge.cli that defines it, imported only when the command is named
# (a cold `table show` does not load Spark's, Hive's or Trino's clients).
COMMANDS = {"changes": "changes", "demo": "demo", "hive": "hive", "incremental": "plan", "index": "index", "plan": "plan",
            "pull": "pull", "serve": "serve", "sync": "sync", "table": "table", "trino": "trino"}


class _OneLineErrors(click.Group):
    """Usage errors as one line naming the command's help, not click's usage
    block; commands loaded when named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            importlib.import_module(f"engine_bridge.cli.{COMMANDS[cmd_name]}")  # its decorators register it on `main`
        return super().get_command(ctx, cmd_name)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.format_message(), err=True)  # the group's own help: what to type next
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"error: {exc.format_message()}{where}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)


def _forget_command_settings() -> None:
    set_default_timeout(DEFAULT_TIMEOUT_SECONDS)
    set_default_storage_options({})


@click.group(cls=_OneLineErrors)
@click.version_option(package_name="hudi-bridge", prog_name="hudi-bridge")
@click.option("--debug", is_flag=True, help="Log debug messages (e.g. why a file is kept or skipped) and show tracebacks.")
@click.option("--strict", is_flag=True, help="Fail on a damaged metadata table instead of listing storage (which is said in a warning).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=DEFAULT_TIMEOUT_SECONDS, show_default=True,
              help="Seconds before a call to remote storage (s3://, gs://) gives up.")
@click.option("--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
              help="Object-store setting, as deltalake names them (AWS_ENDPOINT_URL=http://127.0.0.1:9000, "
                   "AWS_ACCESS_KEY_ID=..., fs.s3a.path.style.access=true, ...); the AWS environment applies too.")
@click.pass_context
def main(ctx: click.Context, debug: bool, strict: bool, timeout: float, storage_options: tuple[str, ...]) -> None:
    """Plan and serve Apache Hudi tables to Hive, Presto/Trino and Spark."""
    set_default_timeout(timeout)
    set_default_storage_options(key_values(storage_options, "--storage-option"))
    # For this command only: a caller in the same process (tests, a notebook) is not left configured by it.
    ctx.call_on_close(_forget_command_settings)
    ctx.meta["hudi_bridge.debug"] = debug
    ctx.meta["hudi_bridge.strict"] = strict
    # Records reach stderr through the handler each command installs (engine_bridge.cli.output).
    logging.getLogger().setLevel(logging.DEBUG if debug else logging.WARNING)

