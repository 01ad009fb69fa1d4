"""Values and helpers every layer uses, none of them Hudi's own:

- `arrow_values`: Arrow arrays and scalars from Python and numpy values;
- `arrow_memory`: the read path's Arrow memory pool, and handing memory back;
- `fingerprints`: a million strings compared by 64-bit fingerprints;
- `text_enum`: enums of strings (closed sets);
- `time_zone`, `datetime_pattern`: Spark's and Java's time zones and patterns;
- `varint`: protobuf's and Avro's base-128 integers;
- `read_ahead`: ordered work a few items ahead on a thread pool;
- `process`: processes on this host.

Import the module you need (`from metadata.util import arrow_values`)."""
