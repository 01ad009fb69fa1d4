"""`hudi-bridge hive ...`: what Hudi's Hive input format would list."""

from __future__ import annotations

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, rich_table


@main.group()
def hive() -> None:
    """Hive's side of Hudi tables: the input format's listing."""


@hive.command("list-status")
@click.option("--conf", "conf_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A Hadoop configuration XML file (the job's JobConf).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Set or override one configuration key.")
@command_output
def list_status_command(conf_file: str | None, settings: tuple[str, ...]) -> Output:
    """The files HoodieParquetInputFormat.listStatus returns for a job configuration."""
    from engine_bridge.hive import list_status, load_job_conf

    conf = load_job_conf(conf_file) if conf_file else {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{setting!r} is not KEY=VALUE", param_hint="--set")
        conf[key.strip()] = value
    result = list_status(conf)

    def render() -> None:
        console.print(result.explain())
        console.print(rich_table("Files", [{"path": f.path, "length": f.length, "modified_ms": f.modification_time} for f in result.files]))

    return Output(result.to_dict(), render)
