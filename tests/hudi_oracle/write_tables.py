# Over 400 lines: it runs as one script under Hudi's own Spark, which imports nothing of hudi-bridge but recipes.py beside it.
"""Runs under Apache Hudi's own Spark bundle, in a virtualenv of its own
(PySpark 3.5; see scripts/setup-hudi.sh): writes test tables of the shapes a
JSON spec names, through Hudi's Spark datasource, and records what Hudi and
Spark read back from each (the oracle the tests compare with).

Usage: python write_tables.py SPEC.json BUNDLE.jar    (a list of shapes; see tests/hudi_oracle/__init__.py)
Imports nothing of hudi-bridge: this interpreter has only PySpark.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType
from recipes import RECIPES

KEYGEN = {
    "simple": ("org.apache.hudi.keygen.SimpleKeyGenerator", "region"),
    "complex": ("org.apache.hudi.keygen.ComplexKeyGenerator", "region,grp"),
    "timestamp": ("org.apache.hudi.keygen.TimestampBasedKeyGenerator", "ts"),
    "custom": ("org.apache.hudi.keygen.CustomKeyGenerator", "region:SIMPLE,ts:TIMESTAMP"),
    "nonpartitioned": ("org.apache.hudi.keygen.NonpartitionedKeyGenerator", ""),
}
DAY_MS = 86_400_000
BASE_MS = 1_705_000_000_000
REGIONS = ("us", "eu", "in")


def rows(ids, generation, extra):
    out = []
    for i in ids:
        row = {"id": i, "grp": f"g{i % 2}", "region": REGIONS[i % 3], "ts": BASE_MS + (i % 4) * DAY_MS, "name": f"n{i % 5}",
               "v": (i * 7 + generation * 13) % 100, "seq": generation}
        if extra:
            row["extra"] = f"x{generation}"
        out.append(row)
    return out


def schema(extra, v_long):
    fields = [StructField("id", IntegerType(), False), StructField("grp", StringType()), StructField("region", StringType()),
              StructField("ts", LongType()), StructField("name", StringType()),
              StructField("v", LongType() if v_long else IntegerType()), StructField("seq", LongType())]
    if extra:
        fields.append(StructField("extra", StringType()))
    return StructType(fields)


def options(shape):
    keygen, partition_field = KEYGEN[shape["key_generator"]]
    opts = {
        "hoodie.table.name": shape["name"],
        "hoodie.datasource.write.table.type": shape["table_type"],
        "hoodie.datasource.write.recordkey.field": "id,grp" if shape["key_generator"] == "complex" else "id",
        "hoodie.datasource.write.partitionpath.field": partition_field,
        "hoodie.datasource.write.keygenerator.class": keygen,
        "hoodie.datasource.write.precombine.field": "seq",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.populate.meta.fields": "true" if shape["meta_fields"] else "false",
        "hoodie.write.table.version": str(shape["version"]),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.record.index.enable": "true" if shape["meta_fields"] else "false",
        "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2", "hoodie.bulkinsert.shuffle.parallelism": "2",
        "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false",
        "hoodie.compact.inline": "false",
    }
    if shape.get("cdc_mode"):
        opts.update({"hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": shape["cdc_mode"]})
    if shape["key_generator"] in ("timestamp", "custom"):
        opts.update({"hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
                     "hoodie.keygen.timebased.output.dateformat": "yyyyMMdd", "hoodie.keygen.timebased.timezone": "UTC"})
    return opts


# Table services run inline on the write after the step that names them.
SERVICES = {
    "cluster": {"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1"},
    "compact": {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"},
    "clean": {"hoodie.clean.automatic": "true", "hoodie.clean.async": "false", "hoodie.cleaner.commits.retained": "1"},
}


def partition_of(row, shape):
    """The partition a row lands in, as far as insert_overwrite needs it (the partition fields' values)."""
    fields = KEYGEN[shape["key_generator"]][1]
    return tuple(row[f.split(":")[0]] for f in fields.split(",") if f)


def completed_commits(path):
    """(requested, completed) times of the completed write instants, in completion order (timeline v2 or v1)."""
    found = []
    timeline = os.path.join(path, ".hoodie", "timeline")
    folder = timeline if os.path.isdir(timeline) else os.path.join(path, ".hoodie")
    for name in os.listdir(folder):
        stem, _, action = name.partition(".")
        if action in ("commit", "deltacommit", "replacecommit"):
            requested, _, completed = stem.partition("_")
            found.append((requested, completed or requested))
    return sorted(found, key=lambda t: t[1])


def write(spark, shape, live=None, steps=None):
    """Write the shape's steps (or `steps` on top of the table as it is, whose
    live rows are `live`); return the live rows as written (the writer's own
    bookkeeping: an oracle that does not depend on Hudi's reader) and their schema."""
    path = shape["path"]
    if shape.get("recipe"):  # a shape the steps cannot say (recipes.py)
        shutil.rmtree(path, ignore_errors=True)
        live_rows, final, shape["recipe_oracle"] = RECIPES[shape["recipe"]](spark, shape)
        return live_rows, final
    opts = options(shape)
    extra = "add_column" in shape["steps"]
    v_long = "promote" in shape["steps"]
    generation = len(shape["steps"])
    if steps is None:
        shutil.rmtree(path, ignore_errors=True)
        extra, v_long, generation, live = False, False, 0, {}
    services, history, saved = {}, [dict(live)], None
    for step in steps if steps is not None else shape["steps"]:
        generation += 1
        kind, _, arg = step.partition(":")
        if kind == "add_column":
            extra = True
            continue
        if kind == "promote":
            v_long = True
            continue
        if kind in SERVICES:
            if kind != "compact" or shape["table_type"] == "MERGE_ON_READ":  # Hudi compacts MOR tables only
                services.update(SERVICES[kind])
            continue
        if kind in ("savepoint", "restore", "rollback", "secondary_index", "expression_index"):
            spark.sql(f"CREATE TABLE IF NOT EXISTS {shape['name']} USING hudi LOCATION '{path}'")
            if kind in ("secondary_index", "expression_index"):  # Hudi 1.1+ builds an index only under a lock
                spark.sql("SET hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL")
                spark.sql("SET hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider")
            latest = completed_commits(path)[-1][0]
            if kind == "savepoint":
                spark.sql(f"CALL create_savepoint(table => '{shape['name']}', commit_time => '{latest}')")
                saved = (latest, dict(live))
            elif kind == "restore":
                spark.sql(f"CALL rollback_to_savepoint(table => '{shape['name']}', instant_time => '{saved[0]}')")
                live = dict(saved[1])
            elif kind == "rollback":
                spark.sql(f"CALL rollback_to_instant(table => '{shape['name']}', instant_time => '{latest}')")
                history.pop()
                live = dict(history[-1])
            elif kind == "secondary_index":
                spark.sql(f"CREATE INDEX idx_{arg} ON {shape['name']} ({arg})")
            else:
                spark.sql(f"CREATE INDEX idx_expr_{arg} ON {shape['name']} USING column_stats({arg}) "
                          "OPTIONS(expr='from_unixtime', format='yyyy-MM-dd')")
            continue
        extra_opts = {}
        if kind == "insert":
            lo, hi = map(int, arg.split("-"))
            ids, operation = list(range(lo, hi)), "insert"
        elif kind in ("upsert", "delete", "insert_overwrite"):
            ids, operation = [int(x) for x in arg.split(",")], kind
        elif kind == "delete_partition":
            field = KEYGEN[shape["key_generator"]][1]
            ids, operation = [], kind
            extra_opts["hoodie.datasource.write.partitions.to.delete"] = f"{field}={arg}"
        else:
            raise ValueError(step)
        written = rows(ids, generation, extra)
        frame = spark.createDataFrame(written, schema(extra, v_long))
        if operation == "delete_partition":
            frame = spark.createDataFrame([], schema(extra, v_long))
        (frame.write.format("hudi").options(**opts).options(**services).options(**extra_opts)
         .option("hoodie.datasource.write.operation", operation).mode("append").save(path))
        services = {}
        by_commit = shape.setdefault("_live_by_commit", {})
        if operation == "insert_overwrite":
            replaced = {partition_of(row, shape) for row in written}
            live = {i: r for i, r in live.items() if partition_of(r, shape) not in replaced}
        if operation == "delete_partition":
            live = {i: r for i, r in live.items() if r[KEYGEN[shape["key_generator"]][1]] != arg}
        for row in written:
            if operation == "delete":
                live.pop(row["id"], None)
            else:
                live[row["id"]] = row
        history.append(dict(live))
        for requested, _ in completed_commits(path):  # this write's commit and the services it ran inline
            by_commit.setdefault(requested, sorted(live))
    final = schema(extra, v_long)
    return [{f.name: row.get(f.name) for f in final.fields} for _, row in sorted(live.items())], final


def oracle(spark, shape, expected, final):
    """The truth: the ids each predicate selects, by Spark's semantics, from the
    rows as written. Then what Hudi reads back: its snapshot, and its filtered
    reads without and with its data skipping (reported, not trusted: its
    partition pruning and skipping have known bugs), or why it cannot read."""
    path = shape["path"]
    written = spark.createDataFrame(expected, final)
    result = {"expected": expected, "truth": {p: sorted(r.id for r in written.where(p).select("id").collect()) for p in shape["predicates"]},
              "live_by_commit": shape.get("_live_by_commit", {})}
    try:
        snapshot = spark.read.format("hudi").option("hoodie.metadata.enable", "true").load(path)
        columns = [c for c in snapshot.columns if not c.startswith("_hoodie_")]
        result["rows"] = sorted((json.loads(r) for r in snapshot.select(*columns).toJSON().collect()), key=lambda r: r["id"])
        result["types"] = {f.name: f.dataType.simpleString() for f in snapshot.schema.fields if f.name in columns}
        hudi, skipping, files = {}, {}, {}
        for predicate in shape["predicates"]:
            hudi[predicate] = sorted(r.id for r in snapshot.where(predicate).select("id").collect())
            skipped = (spark.read.format("hudi").option("hoodie.metadata.enable", "true").option("hoodie.enable.data.skipping", "true")
                       .load(path).where(predicate).select("id"))
            skipping[predicate] = sorted(r.id for r in skipped.collect())
            files[predicate] = files_read(skipped)
        result.update(hudi=hudi, hudi_data_skipping=skipping, hudi_files_read=files)
    except Exception as exc:  # Hudi cannot read what it wrote: reported per shape
        result["read_error"] = _reason(exc)
    result.update(queries(spark, shape))
    return result


def files_read(frame):
    """How many files Hudi's scan of an executed query read after its partition pruning and data skipping: the
    scan's own `numFiles` metric (one per file slice), summed over the plan's scans; None where no scan says."""
    def walk(node):
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            return walk(node.executedPlan())
        if kind.endswith("QueryStageExec"):
            return walk(node.plan())
        metric = node.metrics().get("numFiles")
        counts = [int(metric.get().value())] if kind.endswith("ScanExec") and metric.isDefined() else []
        children = node.children()
        for i in range(children.size()):
            counts.extend(walk(children.apply(i)))
        return counts
    try:
        counts = walk(frame._jdf.queryExecution().executedPlan())
    except Exception:  # the count is a figure to compare with, never a reason to call Hudi's read failed
        return None
    return sum(counts) if counts else None


def queries(spark, shape):
    """Hudi's time travel (as of each completed commit), incremental (after the first commit) and CDC
    (after the first commit, where CDC is on) queries: what each returns, or why it cannot."""
    path, found = shape["path"], {}
    commits = completed_commits(path)
    found["commits"] = commits
    # After the first commit. hudi-bridge's begin is exclusive on every table version; Hudi 1.x reads a table version 8's
    # begin as a completion time, inclusive ("data written with completion_time >= START_COMMIT"), and a version 6's as an
    # instant time, exclusive. Completion times count milliseconds, so "after T" is "from T + 1 ms" there.
    found["begin"] = commits[0][1] if shape["version"] >= 8 else commits[0][0]
    first = str(int(found["begin"]) + 1) if shape["version"] >= 8 else found["begin"]
    found["hudi_begin"] = first

    def attempt(name, read):
        try:
            found[name] = read()
        except Exception as exc:
            found[name + "_error"] = _reason(exc)

    def as_of(requested):
        table = spark.read.format("hudi").option("as.of.instant", requested).load(path)
        return sorted(r.id for r in table.select("id").collect())

    for requested, _ in commits:  # one by one: Hudi refuses those whose files a clean removed
        try:
            found.setdefault("time_travel", {})[requested] = as_of(requested)
        except Exception as exc:
            found.setdefault("time_travel_errors", {})[requested] = _reason(exc)

    def incremental():
        table = (spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
                 .option("hoodie.datasource.read.begin.instanttime", first).load(path))
        return sorted(r.id for r in table.select("id").collect())

    attempt("incremental", incremental)
    if shape.get("cdc_mode"):
        def cdc():
            table = (spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
                     .option("hoodie.datasource.query.incremental.format", "cdc")
                     .option("hoodie.datasource.read.begin.instanttime", first).load(path))
            out = []
            for row in table.select("op", "before", "after").collect():
                after = json.loads(row.after) if row.after else None  # Hudi 1.2 writes a missing image as the JSON "null"
                before = json.loads(row.before) if row.before else None
                out.append([row.op, (after or before or {}).get("id"), before, after])
            return sorted(out, key=lambda r: (r[1] if r[1] is not None else -1, r[0]))

        attempt("cdc", cdc)
    return found


def _reason(exc):
    """The Java exception and its deepest cause, or Python's message."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    cause = java
    while cause.getCause() is not None and cause.getCause() != cause:
        cause = cause.getCause()
    return f"{java.toString()} (cause: {cause.toString()})"


def go_on(spark, shape):
    """On a table whose metadata table hudi-bridge built: Hudi reads it with its
    data skipping on (the metadata table ours), writes `more_steps` on top (its
    writer keeping our metadata table), and reads again."""
    path = shape["path"]
    final = schema("add_column" in shape["steps"], "promote" in shape["steps"])
    live = {row["id"]: row for row in shape["expected"]}

    def filtered():
        reader = spark.read.format("hudi").option("hoodie.metadata.enable", "true").option("hoodie.enable.data.skipping", "true")
        table = reader.load(path)
        return {p: sorted(r.id for r in table.where(p).select("id").collect()) for p in shape["predicates"]}

    result = {"hudi_on_ours": filtered()}
    expected, final = write(spark, shape, live, shape["more_steps"])
    written = spark.createDataFrame(expected, final)
    result.update(expected_after=expected, hudi_after_write=filtered(),
                  truth_after={p: sorted(r.id for r in written.where(p).select("id").collect()) for p in shape["predicates"]})
    return result


def read_synced(spark, spec):
    """Hudi's Spark SQL reading tables hudi-bridge registered in a Hive metastore: the ids of each."""
    found = {}
    for name in spec["tables"]:
        try:
            found[name] = sorted(r.id for r in spark.sql(f"SELECT id FROM {name}").collect())
        except Exception as exc:
            found[name] = _reason(exc)
    return found


def hive_sync_tool(spark, spec):
    """Hudi's own HiveSyncTool (hms mode) registering each table of `spec` in a metastore: None, or why it failed."""
    jvm, found = spark._jvm, {}
    for table in spec["tables"]:
        props = jvm.java.util.Properties()
        for key, value in {"hoodie.datasource.hive_sync.mode": "hms", "hoodie.datasource.hive_sync.metastore.uris": spec["uri"],
                           "hoodie.datasource.hive_sync.database": spec["database"], "hoodie.datasource.hive_sync.table": table["name"],
                           "hoodie.datasource.meta.sync.base.path": table["path"],
                           "hoodie.datasource.hive_sync.partition_fields": table["partition_fields"],
                           "hoodie.datasource.hive_sync.partition_extractor_class": table["extractor"]}.items():
            props.setProperty(key, value)
        hadoop = spark._jsc.hadoopConfiguration()
        hadoop.set("hive.metastore.uris", spec["uri"])
        try:
            tool = jvm.org.apache.hudi.hive.HiveSyncTool(props, hadoop)
            try:
                tool.syncHoodieTable()
            finally:
                tool.close()
            found[table["name"]] = None
        except Exception as exc:
            found[table["name"]] = _reason(exc)
    return found


def hudi_spark(bundle, app, metastore=None, on_driver_class_path=False):
    """A local Spark session with Hudi's bundle (`on_driver_class_path`: on the
    driver's class path too, where Hudi's own threads look for its classes)."""
    builder = SparkSession.builder
    if metastore:  # reading tables a Hive metastore holds: Spark's Hive catalog on it
        builder = builder.config("spark.hadoop.hive.metastore.uris", metastore).config("spark.sql.catalogImplementation", "hive")
    if on_driver_class_path:
        builder = builder.config("spark.driver.extraClassPath", bundle)
    spark = (builder.master("local[2]").appName(app)
             .config("spark.jars", bundle)
             .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
             .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main():
    specs = json.load(open(sys.argv[1]))
    metastore = specs[0].get("metastore") if specs and isinstance(specs[0], dict) else None
    # Writing on top with table services: Hudi's own threads load its classes, from the driver's class path (apache/hudi#13410).
    services_on_top = any(isinstance(s, dict) and s.get("more_steps") for s in specs)
    spark = hudi_spark(sys.argv[2], "hudi-oracle", metastore, on_driver_class_path=services_on_top)
    if specs and "hive_sync_tool" in specs[0]:
        with open(specs[0]["out"], "w") as out:
            json.dump(hive_sync_tool(spark, specs[0]["hive_sync_tool"]), out, indent=1)
        spark.stop()
        return
    if metastore:
        with open(specs[0]["out"], "w") as out:
            json.dump(read_synced(spark, specs[0]), out, indent=1)
        spark.stop()
        return
    for shape in specs:
        if shape.get("more_steps"):
            try:
                result = go_on(spark, shape)
            except Exception as exc:
                result = {"error": _reason(exc)}
            with open(shape["path"] + ".go_on.json", "w") as out:
                json.dump(result, out, indent=1)
            print(shape["name"], result.get("error", "ok"), flush=True)
            continue
        try:
            expected, final = write(spark, shape)
        except Exception as exc:  # the test reports what Hudi refused to write, shape by shape
            result = {"shape": shape, "write_error": _reason(exc)}
        else:
            result = {"shape": shape, **oracle(spark, shape, expected, final)}
            result["recipe_oracle"] = shape.get("recipe_oracle", {})
        with open(os.path.join(shape["path"] + ".oracle.json"), "w") as out:
            json.dump(result, out, indent=1, default=str)
        print(shape["name"], result.get("write_error") or result.get("read_error") or "ok", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
