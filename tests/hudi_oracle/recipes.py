"""Table shapes Hudi writes that the step language of write_tables.py does
not express (issue 63's round two): two-level partitions with encoded, empty
and NULL values, a wide typed schema with NaN, a bucket-index MERGE_ON_READ
table with a pending compaction, an archived timeline, a version 6 table
after a rollback. Each recipe writes its table through Hudi's Spark
datasource and returns the live rows as Hudi's readers give them (the
writer's own bookkeeping), their schema and what else its test needs.

Runs under Hudi's bundle, like write_tables.py; imports nothing of hudi-bridge.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timezone
from decimal import Decimal

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def _options(shape, **more):
    version = shape["version"]
    opts = {
        "hoodie.table.name": shape["name"],
        "hoodie.datasource.write.table.type": shape["table_type"],
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "seq",
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.index.partition.stats.enable": "true" if version >= 8 else "false",
        "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2", "hoodie.bulkinsert.shuffle.parallelism": "2",
        "hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false", "hoodie.compact.inline": "false",
        "hoodie.parquet.small.file.limit": "0",  # every insert its own file group: many small files to prune
    }
    opts.update(more)
    return opts


def _save(spark, shape, rows, schema, operation, **options):
    frame = spark.createDataFrame(rows, schema)
    frame.write.format("hudi").options(**_options(shape, **options)).option("hoodie.datasource.write.operation", operation) \
        .mode("append").save(shape["path"])


# Two-level partitions: values Hive escapes, values that are paths, non-ASCII, and the two Hudi writes to the default partition.
COUNTRIES = ("de/at", "a=b", "50%", "sp ace", "", None, "nl")
CITIES = ("x", "", None, "日本")


def default_partitions(spark, shape):
    """`country,city` partitions (ComplexKeyGenerator), hive-style or not per the shape, url-encoded per the shape.
    Hudi writes NULL and '' under __HIVE_DEFAULT_PARTITION__ and its readers, as Hive's and Trino's, read the
    partition columns from the path: NULL there."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("country", StringType()), StructField("city", StringType()),
                         StructField("v", IntegerType()), StructField("seq", LongType())])
    rows = [{"id": i, "country": COUNTRIES[i % len(COUNTRIES)], "city": CITIES[(i // len(COUNTRIES)) % len(CITIES)], "v": i % 10, "seq": 1}
            for i in range(len(COUNTRIES) * len(CITIES))]
    _save(spark, shape, rows, schema, "insert", **{
        "hoodie.datasource.write.partitionpath.field": "country,city",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": str(shape["recipe_args"]["hive_style"]).lower(),
        "hoodie.datasource.write.partitionpath.urlencode": str(shape["recipe_args"]["url_encode"]).lower()})
    read = [{**r, "country": r["country"] or None, "city": r["city"] or None} for r in rows]
    # An upsert into the partitions whose value is not ASCII: recorded, not relied on (Hudi 1.0.2 has failed on it).
    japan = [{**r, "v": r["v"] + 100, "seq": 2} for r in rows if r["city"] == "日本"]
    try:
        _save(spark, shape, japan, schema, "upsert", **{
            "hoodie.datasource.write.partitionpath.field": "country,city",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": str(shape["recipe_args"]["hive_style"]).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": str(shape["recipe_args"]["url_encode"]).lower()})
    except Exception as exc:  # the table stays as the insert left it (Hudi rolls the failed write back on its next one)
        from write_tables import _reason

        return read, schema, {"upsert_into_japan": _reason(exc)}
    updated = {r["id"]: {**r, "country": r["country"] or None, "city": r["city"] or None} for r in japan}
    return [updated.get(r["id"], r) for r in read], schema, {"upsert_into_japan": "ok"}


def _nan(i):
    """Double values in the orders that matter to a min/max accumulated with `<`: NaN first, NaN after, NaN alone."""
    return ([math.nan, -0.5], [-0.5, math.nan], [math.nan], [1.0, 2.0], [math.nan, 3.0, -2.0], [None, math.nan], [0.0, -0.0],
            [None, None])[i % 8]


def wide_typed(spark, shape):
    """One small file per case: NaN (first, after, alone), NULL, binary, a struct, long strings, microsecond
    timestamps, an all-null boolean file, decimals and dates; column_stats on a subset of the columns."""
    schema = StructType([
        StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("dbl", DoubleType()),
        StructField("flt", FloatType()), StructField("b", BooleanType()), StructField("t", TimestampType()),
        StructField("bin", BinaryType()), StructField("st", StructType([StructField("a", IntegerType()), StructField("s", StringType())])),
        StructField("name", StringType()), StructField("dec", DecimalType(10, 2)), StructField("d", DateType()),
        StructField("seq", LongType())])
    live = []
    for commit in range(8):  # one partition per case, each its own file, in one insert
        values = _nan(commit)
        for j, value in enumerate(values):
            i = commit * 10 + j
            live.append({"id": i, "region": f"r{commit}", "dbl": value, "flt": None if value is None else float(value),
                         "b": None if commit == 3 else (i % 2 == 0),
                         "t": datetime(2024, 1, 1, 6, 42, 54, 666678 + j, tzinfo=timezone.utc) if commit % 3 else None,
                         "bin": bytes([1, commit, j]), "st": {"a": i, "s": f"s{i}"},
                         "name": ("xa" if j == 0 else "xb") + "z" * (300 if commit == 5 else 3) + str(i),
                         "dec": Decimal(f"{i}.25"), "d": date(2024, 1, 1 + commit), "seq": 1})
    _save(spark, shape, live, schema, "insert", **{
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.index.column.stats.column.list": "id,dbl,flt,b,t,bin,name,dec,d"})
    return live, schema, {}


def bucket_pending_compaction(spark, shape):
    """MERGE_ON_READ with the bucket index: inserts, a compaction scheduled (not run), then an upsert of
    ids 7..41 into p=b: Hudi's partition_stats for p=b then cover only what was written after the schedule."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("p", StringType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    base = {"hoodie.datasource.write.partitionpath.field": "p",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.index.type": "BUCKET", "hoodie.bucket.index.num.buckets": "2", "hoodie.bucket.index.hash.field": "id"}
    live = {}

    def put(ids, p, seq, operation, **more):
        rows = [{"id": i, "p": p, "v": (i * 7 + seq) % 50, "seq": seq} for i in ids]
        _save(spark, shape, rows, schema, operation, **base, **more)
        live.update({r["id"]: r for r in rows})

    put(range(1, 40, 2), "b", 1, "upsert")
    put(range(2, 40, 2), "a", 1, "upsert")
    put(range(1, 20, 2), "b", 2, "upsert")
    # Hudi schedules the compaction inline after this write and does not run it.
    put(range(21, 30, 2), "b", 3, "upsert", **{"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"})
    put([*range(7, 40, 2), 41], "b", 4, "upsert")
    return [live[i] for i in sorted(live)], schema, {}


def archived(spark, shape):
    """Sixteen commits with Hudi's archival on: most of the timeline archived (version 8's LSM timeline,
    version 6's archive logs). Records Hudi's incremental reads from several begins, archived ones included."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    more = {"hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.archive.automatic": "true", "hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
            "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1",
            "hoodie.metadata.compact.max.delta.commits": "3", "hoodie.metadata.keep.min.commits": "3", "hoodie.metadata.keep.max.commits": "4",
            "hoodie.parquet.small.file.limit": "104857600"}
    from write_tables import completed_commits

    live, commits = {}, []
    for commit in range(16):
        rows = [{"id": commit * 2 + k, "region": ("us", "eu")[k], "v": commit, "seq": commit} for k in range(2)]
        if commit == 0:  # a partition only the first commit writes: its file stays current after that commit is archived
            rows += [{"id": 100 + k, "region": "in", "v": 0, "seq": 0} for k in range(2)]
        if commit % 3 == 2:  # an update of an early row now and then
            rows.append({"id": commit % 5, "region": ("us", "eu")[commit % 5 % 2], "v": 100 + commit, "seq": commit})
        _save(spark, shape, rows, schema, "upsert", **more)
        live.update({r["id"]: r for r in rows})
        commits.append(next(c for c in reversed(completed_commits(shape["path"])) if c not in commits))
    # Hudi's incremental reads after each commit, and of ranges wholly archived: begin exclusive as hudi-bridge reads it
    # (version 8: Hudi's begin is a completion time, inclusive, so "after T" is from T + 1 ms; version 6: an instant time).
    def after(commit):
        return str(int(commit[1]) + 1) if shape["version"] >= 8 else commit[0]

    def pull(begin, end=None):
        reader = (spark.read.format("hudi").option("hoodie.datasource.query.type", "incremental")
                  .option("hoodie.datasource.read.begin.instanttime", begin))
        if end is not None:
            reader = reader.option("hoodie.datasource.read.end.instanttime", end)
        try:
            return sorted(r.id for r in reader.load(shape["path"]).select("id").collect())
        except Exception as exc:  # reported: Hudi cannot read this range
            return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    pulls = {}
    for k in range(0, 15, 2):
        pulls[f"{k}-"] = pull(after(commits[k]))
    for k, j in ((0, 3), (1, 5), (4, 8)):
        pulls[f"{k}-{j}"] = pull(after(commits[k]), commits[j][1] if shape["version"] >= 8 else commits[j][0])
    return [live[i] for i in sorted(live)], schema, {"commits": commits, "pulls": pulls}


def rolled_back(spark, shape):
    """Version 6 MERGE_ON_READ after a failed write Hudi rolled back: inserts, upserts into log files, then an
    upsert that dies after writing its files and its metadata-table commit, before its own commit completes
    (its completed instant file removed, as a crash leaves it); the next upsert rolls it back first."""
    import glob
    import os

    schema = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    more = {"hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "false"}
    live = {}
    for seq, ids in enumerate(([*range(12)], [1, 2, 7], [4, 8], [5, 1]), start=1):
        rows = [{"id": i, "region": ("us", "eu", "in")[i % 3], "v": (i * 7 + seq) % 20, "seq": seq} for i in ids]
        _save(spark, shape, rows, schema, "upsert", **more)
        if seq == 3:  # the crash: the data commit never completed
            completed = sorted(glob.glob(os.path.join(shape["path"], ".hoodie", "*.deltacommit")))
            os.remove(completed[-1])
            continue
        live.update({r["id"]: r for r in rows})
    return [live[i] for i in sorted(live)], schema, {}


def timestamp_days(spark, shape):
    """A TIMESTAMP key generator writing `yyyy/MM/dd` in a zone with daylight saving time (three folder levels per
    value), epoch milliseconds in."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("ts", LongType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    base = 1_711_846_800_000  # 2024-03-31T01:00Z, the night Europe/Amsterdam moves its clocks
    rows = [{"id": i, "ts": base + i * 3_600_000 * 7, "v": i, "seq": 1} for i in range(24)]
    _save(spark, shape, rows, schema, "insert", **{
        "hoodie.datasource.write.partitionpath.field": "ts",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd", "hoodie.keygen.timebased.timezone": "Europe/Amsterdam",
        "hoodie.datasource.write.hive_style_partitioning": "false"})
    return rows, schema, {}


def record_index_strings(spark, shape):
    """Non-partitioned, string record keys ('k001'...), the record index on: LIKE 'k01%' must keep every file
    holding such a key (Hudi 1.0.2 looks the pattern up as a key)."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("key", StringType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    more = {"hoodie.datasource.write.recordkey.field": "key", "hoodie.datasource.write.partitionpath.field": "",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.metadata.record.index.enable": "true", "hoodie.index.type": "RECORD_INDEX"}
    live = {}
    for batch in range(4):
        rows = [{"id": i, "key": f"k{i:03d}", "v": i % 7, "seq": batch} for i in range(batch * 20, batch * 20 + 20)]
        _save(spark, shape, rows, schema, "upsert", **more)
        live.update({r["id"]: r for r in rows})
    return [live[i] for i in sorted(live)], schema, {}


def evolved_past_int(spark, shape):
    """An int column promoted to long, then values past 2**31 written: files before the promotion hold ints."""
    small = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("n", IntegerType()),
                        StructField("seq", LongType())])
    wide = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("n", LongType()),
                       StructField("seq", LongType())])
    more = {"hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true", "hoodie.schema.on.read.enable": "false",
            "hoodie.datasource.write.reconcile.schema": "false"}
    first = [{"id": i, "region": ("us", "eu")[i % 2], "n": 2**31 - 10 + i, "seq": 1} for i in range(8)]
    _save(spark, shape, first, small, "insert", **more)
    later = [{"id": i, "region": ("us", "eu")[i % 2], "n": 2**31 + 5 * i, "seq": 2} for i in range(6, 14)]
    _save(spark, shape, later, wide, "upsert", **more)
    live = {r["id"]: r for r in first}
    live.update({r["id"]: r for r in later})
    return [live[i] for i in sorted(live)], wide, {}


def z_ordered(spark, shape):
    """400 rows clustered by Hudi's z-order on (x, y) into many small files: data skipping at its best."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("x", IntegerType()), StructField("y", IntegerType()),
                         StructField("seq", LongType())])
    rows = [{"id": i, "x": (i * 37) % 100, "y": (i * 53) % 100, "seq": 1} for i in range(400)]
    more = {"hoodie.datasource.write.partitionpath.field": "", "hoodie.datasource.write.keygenerator.class":
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
            "hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "1",
            "hoodie.layout.optimize.strategy": "z-order", "hoodie.clustering.plan.strategy.sort.columns": "x,y",
            "hoodie.clustering.plan.strategy.target.file.max.bytes": "4096", "hoodie.clustering.plan.strategy.small.file.limit": "1073741824",
            "hoodie.parquet.max.file.size": "4096", "hoodie.parquet.block.size": "4096", "hoodie.copyonwrite.record.size.estimate": "400"}
    _save(spark, shape, rows, schema, "insert", **more)
    return rows, schema, {}


def cdc_across_compaction(spark, shape):
    """MERGE_ON_READ with CDC (DATA_BEFORE_AFTER): upserts, an inline compaction, more upserts and a delete."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("v", IntegerType()),
                         StructField("seq", LongType())])
    more = {"hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.table.cdc.enabled": "true", "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER"}
    live = {}
    for seq, (ids, operation, extra) in enumerate((
            (range(10), "upsert", {}), ([1, 2, 3], "upsert", {}),
            ([4, 5], "upsert", {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}),
            ([1, 6], "upsert", {}), ([2], "delete", {})), start=1):
        rows = [{"id": i, "region": ("us", "eu")[i % 2], "v": (i * 7 + seq) % 20, "seq": seq} for i in ids]
        _save(spark, shape, rows, schema, operation, **more, **extra)
        for r in rows:
            if operation == "delete":
                live.pop(r["id"], None)
            else:
                live[r["id"]] = r
    return [live[i] for i in sorted(live)], schema, {}


def record_level_index(spark, shape):
    """Partitioned by region, string keys ('g0000'...), with Hudi 1.2's record-level index: global (a key is
    unique in the table) or partitioned (unique within its partition). A key lookup must keep the file that holds
    the key, and may keep no other."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("key", StringType()), StructField("region", StringType()),
                         StructField("v", IntegerType()), StructField("seq", LongType())])
    index = ("hoodie.metadata.global.record.level.index.enable" if shape["recipe_args"]["scope"] == "global"
             else "hoodie.metadata.record.level.index.enable")
    more = {"hoodie.datasource.write.recordkey.field": "key", "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.hive_style_partitioning": "true", index: "true", "hoodie.index.type": "RECORD_LEVEL_INDEX"
            if shape["recipe_args"]["scope"] == "partitioned" else "GLOBAL_RECORD_LEVEL_INDEX"}
    live = {}
    for batch in range(4):
        rows = [{"id": i, "key": f"g{i:04d}", "region": ("us", "eu", "in")[i % 3], "v": i % 7, "seq": batch}
                for i in range(batch * 10, batch * 10 + 10)]
        _save(spark, shape, rows, schema, "upsert", **more)
        live.update({r["id"]: r for r in rows})
    return [live[i] for i in sorted(live)], schema, {}


# Expression indexes as Hudi 1.1+/1.2 builds them (CREATE INDEX ... USING column_stats(col) OPTIONS(expr=...)), each over a column
# whose values spread across files. Hudi's own reads have dropped rows through such indexes (apache/hudi#19445, #19481,
# #14352, #17499): the truth is the writer's rows, and the report says where Hudi's read differs.
EXPRESSIONS = (("upper", "name", ""), ("date_format", "t", "yyyy-MM-dd"), ("to_date", "s", "yyyy-MM-dd"),
               ("from_unixtime", "ts", "yyyy-MM-dd"))


def expression_indexes(spark, shape):
    """Partitioned by region; four batches of inserts and upserts, the expression indexes created after the first
    (so later commits maintain them, as a pipeline's do)."""
    schema = StructType([StructField("id", IntegerType(), False), StructField("region", StringType()), StructField("name", StringType()),
                         StructField("t", TimestampType()), StructField("s", StringType()), StructField("ts", LongType()),
                         StructField("seq", LongType())])
    more = {"hoodie.datasource.write.partitionpath.field": "region", "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",  # Hudi 1.1+ builds an index only under a lock
            "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}

    def row(i, seq):
        day = 1 + (i + seq) % 6
        return {"id": i, "region": ("us", "eu")[i % 2], "name": ("n", "m", "N", "M")[i % 4] + str(i % 5),
                "t": datetime(2024, 1, day, i % 24, tzinfo=timezone.utc), "s": f"2024-01-{day:02d}",
                "ts": int(datetime(2024, 1, day, 12, tzinfo=timezone.utc).timestamp()), "seq": seq}

    live = {}
    for seq, ids in enumerate((range(0, 12), range(12, 20), [1, 5, 14], [3, 20, 21]), start=1):
        rows = [row(i, seq) for i in ids]
        _save(spark, shape, rows, schema, "upsert", **more)
        live.update({r["id"]: r for r in rows})
        if seq == 1:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {shape['name']} USING hudi LOCATION '{shape['path']}'")
            spark.sql("SET hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL")
            spark.sql("SET hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider")
            for function, column, pattern in EXPRESSIONS:
                options = f"expr='{function}'" + (f", format='{pattern}'" if pattern else "")
                spark.sql(f"CREATE INDEX idx_{function} ON {shape['name']} USING column_stats({column}) OPTIONS({options})")
    return [live[i] for i in sorted(live)], schema, {}


RECIPES = {f.__name__: f for f in (default_partitions, wide_typed, bucket_pending_compaction, archived, rolled_back, timestamp_days,
                                   record_index_strings, evolved_past_int, z_ordered, cdc_across_compaction, record_level_index,
                                   expression_indexes)}
