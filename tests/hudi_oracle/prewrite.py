"""Has Apache Hudi write the slow tier's tables ahead, into the cache the tier reads
(`.cache/hudi-tables/<release>/`), one release after another.

`scripts/check.sh` runs this in the background while the quick suite runs: the
quick suite keeps one core busy, Hudi's Spark writer takes the other, and the
slow tier then finds its tables written. A release whose setup is missing is
skipped here; the slow tier says why. Usage: python -m tests.hudi_oracle.prewrite
"""

from __future__ import annotations

import sys
import time

from tests.hudi_oracle import RELEASES, missing_setup, release_shapes, tables


def main() -> int:
    failed = 0
    for release in RELEASES:
        why = missing_setup(release)
        if why:
            print(f"prewrite: Hudi {release}: skipped: {why}", flush=True)
            continue
        started = time.monotonic()
        try:
            written = tables(release_shapes(release), release)
        except Exception as exc:  # the slow tier writes what is missing again, and fails there with the whole story
            failed += 1
            print(f"prewrite: Hudi {release}: failed: {str(exc).splitlines()[0]}", flush=True)
            continue
        print(f"prewrite: Hudi {release}: {len(written)} tables in {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
