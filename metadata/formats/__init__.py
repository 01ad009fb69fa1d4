"""Hudi's file formats, each read (and where we write it, written) in one module:

- `log_format`: log files and their blocks (data, deletes, commands, HFile data);
- `avro_schema`: Avro schemas and their Arrow types, as Hudi's writers map them;
- `bloom_filter`: the bloom filters of record keys in base-file footers;
- `cdc`: the change-data logs (`.cdc` files) and their supplemental modes;
- `stats_table`: the statistics table the stats readers make and the evaluator reads.

The metadata table's HFiles and records are in `metadata.mdt`."""
