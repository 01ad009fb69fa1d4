"""Render docs/conformance.md (and copy docs/conformance.json) from the report
the conformance tier writes: `python -m tests.hudi_oracle.report` after
`pytest tests/test_hudi_conformance.py`."""

from __future__ import annotations

import json
import shutil
from typing import Any

from tests.hudi_oracle import CACHE, HUDI_VERSION, RELEASES, REPO

INTRO = f"""# Conformance with Apache Hudi

`tests/test_hudi_conformance.py` writes each shape below with Apache Hudi {HUDI_VERSION}'s own Spark
datasource (`hudi-spark3.5-bundle_2.12:{HUDI_VERSION}` from Maven Central, PySpark 3.5.7 in a
virtualenv of its own) and compares this project's answers with the rows written and with what Hudi
and Spark read back. Every shape: 9 ids inserted, upserts, a delete, and where named a column added or
`v` promoted from INT to BIGINT; Hudi's metadata table with files, column_stats and (with meta
fields) the record index. The `history` shapes add Hudi's table services and replace commits
(inline clustering, cleaning, insert overwrite, delete_partition; on MOR a rollback, an inline
compaction, a savepoint and a restore); the `cdc` shapes log CDC in each supplemental mode; one
shape has a secondary index and an expression index Hudi built (`CREATE INDEX`). The JSON of this run is [conformance.json](conformance.json) (every run
writes `.cache/hudi-tables/{HUDI_VERSION}/conformance.json`; `python -m tests.hudi_oracle.report`
renders this page from it).

Cells: **equal** (our answer equals the truth: the rows written, filtered by Spark's semantics),
**refused** (one line, where Hudi refuses too), or what Apache Hudi itself gets wrong. A plan cell
means: the rows of the file slices our plan keeps, filtered, are exactly the rows Spark selects
from the rows written (no dropped file, the same row semantics). **Both ways**: hudi-bridge built
the metadata table of the table Hudi wrote (Hudi's own removed), Hudi read through it with its data
skipping on, wrote on top (its writer keeping our metadata table): upserts with an inline compaction
(MERGE_ON_READ) and an automatic clean after them, an insert and a delete; and then `table validate`
and our plans were checked again (stable over 3 runs on each release). **Time travel**: as of every completed
commit, our snapshot's ids equal Hudi's `as.of.instant` read (where a clean removed that time's
files, both refuse). **Incremental**: after the first commit, our pull's rows equal Hudi's
incremental query's (Hudi 1.x reads a table version 8's begin as an inclusive completion time; ours
is exclusive on every version, so Hudi is asked from one millisecond later). **CDC**: our change
feed's (op, id) pairs equal Hudi's CDC query's. **Synced**: the tables `hudi-bridge sync` registered
in a Hive metastore, read through Hudi's Spark SQL on that metastore.
"""

OUTRO = """
Notes:

- Hudi's filtered reads of `ts >= ...` on tables whose `ts` is a TimestampBasedKeyGenerator's
  partition field return no rows: Hudi prunes partitions by comparing the predicate with the
  formatted path (`20240112`), not the value. This project maps the predicate through the key
  generator's transform and keeps those partitions.
- Hudi writes tables without meta fields only with the simple, complex and non-partitioned key
  generators ("Only simple, non-partitioned or complex key generator are supported when meta-fields
  are disabled"), so the shapes here and in `tests/table_shapes.py` do the same.
- Hudi 1.1.0's and 1.2.1's bundles are not served by Maven Central here; 1.1.1 and 1.2.0 are, and
  write table version 9 ("Across Hudi releases" below). Hudi 1.0.2 has no partitioned record index
  (1.1 adds it): the newer releases' own shapes have one.
- `HoodieMetadataTableValidator` lives in `hudi-utilities`, which Maven Central does not serve here
  (`hudi-utilities-bundle_2.12` and `-slim-bundle` 1.0.2, 1.0.1 and 0.15.0 tried); Hudi reading and
  writing through our metadata tables with data skipping on ("both ways") stands in for it.
- Trino 476 (`tests/test_trino_live.py`, slow tier): its Hudi connector reads every shape above,
  synced by hudi-bridge, with the same rows on Hudi's metadata table and on ours (on COW, the rows
  written, the INT to BIGINT promotion Hudi cannot read included). It lists storage and reads
  read-optimized: it neither reads the metadata table nor prunes on column statistics. It cannot
  read a table version 8 whose `.hoodie/timeline/history` folder is empty, as Hudi 1.0.2 leaves it
  until it first archives ("Could not load archived commit timeline": its storage layer reports an
  empty folder as missing; a neighbour of apache/hudi#13994); with the empty folder removed it
  reads them. The test checks both.
- Presto: `com.facebook.presto:presto-server:0.287` (the newest Maven Central serves here, 2.1 GB)
  fails to start on Java 17 ("Unsupported class file major version 61": its bytecode library
  predates Java 17) and the Java 25 beside it; it needs Java 8 or 11, which neither Debian's
  packages nor Maven Central offer here. The Presto dialect of `trino rewrite` is tested against the
  protocol server in `tests/test_trino_bridge.py` only.
"""


HIVE_INTRO = f"""
## Hive's input format and `hive list-status`

`tests/test_hive_input_format.py` runs Hudi {HUDI_VERSION}'s `HoodieParquetInputFormat.listStatus(JobConf)`
(`tests/hudi_oracle/InputFormatOracle.java`, Java 17, on the Spark bundle's `hudi-hadoop-mr` classes and
Spark 3.5's Hadoop and Hive jars; Maven Central does not serve `hudi-hadoop-mr-bundle` here: 1.0.2, 1.0.1 and
0.15.0 were tried) and `hive list-status` on the same job configurations for every shape above: snapshot
of every partition and of one, with the metadata table on, as of the second commit, incremental from 0
(one commit, all) and from the second commit (two, one partition), the last commit left pending, the
same with `consume.pending.commits`, and a pushed filter. Files and lengths are compared.
"""


def render_hive(report: dict[str, dict[str, str]]) -> list[str]:
    configurations = sum(len(cells) for cells in report.values())
    lines = [HIVE_INTRO, f"{len(report)} shapes, {configurations} job configurations listed both ways.\n", "| shape | equal files and lengths | pushed filter | `consume.pending.commits` | where Hudi refuses |",
             "|---|---|---|---|---|"]
    for shape in sorted(report):
        cells = report[shape]
        equal = [k for k, v in cells.items() if v == "equal"]
        filtered = next((v for k, v in cells.items() if k.startswith("snapshot, pushed filter")), "–")
        pending = cells.get("last commit pending, consume.pending.commits", "–")
        refused = "; ".join(f"{k}: {v}" for k, v in cells.items() if "refuse" in v) or "–"
        lines.append(f"| `{shape}` | {len(equal)} configurations | {filtered} | {pending} | {refused} |")
    return lines


ROUND_TWO_INTRO = f"""
## Round two: shapes the step language cannot say

`tests/test_hudi_round_two.py` has Hudi {HUDI_VERSION} write these with `tests/hudi_oracle/recipes.py`: two-level
partitions with encoded, empty and NULL values (hive-style, and url-encoded without), a wide typed table with
NaN in every position, a bucket-index MERGE_ON_READ table with a pending compaction, archived timelines on
versions 8 and 6 (14 of 16 commits archived), a version 6 MERGE_ON_READ table after Hudi rolled back a failed
write, a `yyyy/MM/dd` timestamp key generator in Europe/Amsterdam, a non-partitioned record index on string
keys, a column promoted past 2^31, z-ordered small files and CDC across a compaction. Every plan is checked by
`plan --verify`'s rule too (no ruled-out slice holds a matching row). The JSON is [round_two.json](round_two.json);
which statistics are trusted and why is in [data-skipping.md](data-skipping.md).
"""


RELEASES_INTRO = """
## Across Hudi releases

The slow tier has Apache Hudi 1.0.2, 1.1.1 and 1.2.0 (`hudi-spark3.5-bundle_2.12` from Maven Central; 1.1.0 and
1.2.1 are not served) write the shapes above: 1.0.2 at table versions 6 and 8 as named; 1.1.1 and 1.2.0 write the
version 8 shapes at version 9 (their names say `v9`), a few at 8 still (`hoodie.write.table.version=8`) and the
version 6 shapes at 6. Both also write the shapes only they can: the global and the partitioned record-level index
(a key lookup keeps exactly the file group that holds the key) and a MERGE_ON_READ table with CDC compacted
(Hudi 1.2 writes change-data logs at compaction time; they are not changes). The slow tier runs 1.2.0's version 9
shapes and a sample of 1.1.1's; the `matrix` tier (`scripts/check.sh -m matrix`) the rest. Each cell counts the checks of
the shape on that release (the same checks as above), all equal, refused as Hudi refuses, or a Hudi bug named.
"""


def render_releases(reports: dict[str, dict[str, dict[str, str]]]) -> list[str]:
    releases = [r for r in RELEASES if r in reports]
    lines = [RELEASES_INTRO, "| shape | " + " | ".join(f"Hudi {r}" for r in releases) + " |", "|---|" + "---|" * len(releases)]
    notes = []
    for shape in sorted({name for report in reports.values() for name in report}):
        cells = []
        for release in releases:
            held = reports[release].get(shape)
            if held is None:
                cells.append("–")
                continue
            if "write" in held:
                cells.append("Hudi fails to write it")
                notes.append(f"- `{shape}` on {release}: {held['write']}")
                continue
            differ = [k for k, v in held.items() if "Hudi's own read differs" in v or "fails to read" in v]
            notes += [f"- `{shape}` on {release}, {k}: {held[k]}" for k in differ]
            cells.append(f"equal ({len(held)})" + (f"; Hudi wrong on {len(differ)}" if differ else ""))
        lines.append(f"| `{shape}` | " + " | ".join(cells) + " |")
    return [*lines, "", "Where Hudi itself is wrong, by release:", "", *notes, ""]


def render_round_two(report: dict[str, dict[str, str]]) -> list[str]:
    checks = sum(len(cells) for cells in report.values())
    lines = [ROUND_TWO_INTRO, f"{len(report)} shapes, {checks} checks.\n", "| shape | check | outcome |", "|---|---|---|"]
    for shape in sorted(report):
        for check, outcome in sorted(report[shape].items()):
            lines.append(f"| `{shape}` | {check.replace('|', '&#124;')} | {outcome.replace('|', '&#124;')} |")
    return lines


SYNCED_CELL = "Hive sync read by Hudi's Spark SQL"
PRUNING_INTRO = """Pruning against Hudi's own data skipping: where Hudi's answer is right, the plans column counts the
predicates on which our plan keeps no more file slices than Hudi's scan read (its `numFiles` metric, with data skipping on).
Where Hudi keeps fewer, it is for one of two reasons, both on the side of soundness, and the test fails on any other:
the record index is not trusted after an insert commit, which may write a key into two file groups (`--assume-unique-keys`
trusts it, as Hudi does, and then keeps as few as Hudi); and file slices written before a column was added have no
statistics for it, which Hudi reads as "no value" and we do not (they hold only nulls of it):"""


def render(report: dict[str, dict[str, Any]], hive: dict[str, dict[str, str]] | None = None,
           round_two: dict[str, dict[str, str]] | None = None) -> str:
    checks = sum(len(cells) for cells in report.values())
    summary = f"{len(report)} shapes, {checks} checks (cells of the JSON), each equal, refused as Hudi refuses, or a documented Hudi bug.\n"
    lines = [INTRO, summary, "| shape | snapshot | plans | time travel | incremental | change feed | CDC | Hudi's metadata table validated "
                    "| both ways | synced, read by Hudi's Spark SQL |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    notes: list[str] = []
    pruning_notes: list[str] = []
    for shape in sorted(report):
        cells = report[shape]
        if "write" in cells:
            lines.append(f"| `{shape}` | Hudi fails to write it | – | – | – | – | – | – | – | – |")
            notes.append(f"- `{shape}`: {cells['write']}")
            continue
        plans = [k for k in cells if k.startswith("plan ")]
        differ = [k for k in plans if "Hudi's own read differs" in cells[k]]
        notes += [f"- `{shape}`, `{k[5:]}`: {cells[k]}" for k in differ]
        pruned_more = [k for k in plans if "kept where Hudi's data skipping read" in cells[k]]
        pruning_notes += [f"- `{shape}`, `{k[5:]}`: {cells[k].split('; ', 1)[1]}" for k in pruned_more]
        snapshot = "equal"
        if "fails to read" in cells["snapshot"]:
            snapshot += "; Hudi fails to read it"
            notes.append(f"- `{shape}`: {cells['snapshot']}")
        planned = f"equal ({len(plans)})" + (f"; Hudi's own read drops rows on {len(differ)}" if differ else "")
        compared = [k for k in plans if "Hudi's data skipping read" in cells[k]]
        if compared:
            planned += f"; pruned as much as Hudi's data skipping on {len(compared) - len(pruned_more)} of {len(compared)}"
        incremental = "refused (no meta fields)" if cells["incremental"].startswith("refused") else "answered"
        if cells.get("incremental rows") == "equal":
            incremental = "equal to Hudi's"
        travel = cells.get("time travel", "–")
        validated = cells["validate (Hudi's metadata table)"].split(";")[0]
        both = cells.get("Hudi reads through our metadata table, then writes on top", "–")
        if both != "–" and cells.get("our plans after Hudi wrote on top of our metadata table") == "equal":
            both += "; our plans after: equal"
        synced = cells.get(SYNCED_CELL, "–")
        lines.append(f"| `{shape}` | {snapshot} | {planned} | {travel} | {incremental} | {cells['changes']} | {cells.get('CDC', '–')} "
                     f"| {validated} | {both} | {synced} |")
    lines += ["", "What Apache Hudi itself gets wrong on these shapes (where this project stays right):", "", *notes, "",
              PRUNING_INTRO, "", *pruning_notes, OUTRO]
    releases = {r: json.loads(p.read_text()) for r in RELEASES if (p := CACHE / "hudi-tables" / r / "conformance.json").is_file()}
    if len(releases) > 1:
        lines += render_releases(releases)
        for release, held in releases.items():
            if release == HUDI_VERSION:
                continue  # conformance.json
            (REPO / "docs" / f"conformance-{release}.json").write_text(json.dumps(held, indent=1, sort_keys=True))
    if round_two:
        lines += render_round_two(round_two)
    if hive:
        lines += render_hive(hive)
    return "\n".join(lines)


if __name__ == "__main__":
    source = CACHE / "hudi-tables" / HUDI_VERSION / "conformance.json"
    hive_source = CACHE / "hudi-tables" / HUDI_VERSION / "hive_input_format.json"
    shutil.copyfile(source, REPO / "docs" / "conformance.json")
    hive = json.loads(hive_source.read_text()) if hive_source.is_file() else None
    if hive:
        shutil.copyfile(hive_source, REPO / "docs" / "hive_input_format.json")
    round_two_source = CACHE / "hudi-tables" / HUDI_VERSION / "round_two.json"
    round_two = json.loads(round_two_source.read_text()) if round_two_source.is_file() else None
    if round_two:
        shutil.copyfile(round_two_source, REPO / "docs" / "round_two.json")
    (REPO / "docs" / "conformance.md").write_text(render(json.loads(source.read_text()), hive, round_two))
