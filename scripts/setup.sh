#!/usr/bin/env bash
# Create .venv and install hudi-bridge into it (with test extras given --test).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extras}"
if [ -n "$extras" ]; then
    # Apache Hudi itself, the tests' table factory and oracle (tests/hudi_oracle): its Spark bundles from Maven Central
    # (80 to 105 MB each, into ~/.m2) and PySpark 3.5 in a virtualenv of its own (about 320 MB), apart from the project's PySpark 4.
    for HUDI_VERSION in 1.0.2 1.1.1 1.2.0; do  # as tests/hudi_oracle/__init__.py names them (RELEASES)
        if command -v mvn >/dev/null; then
            mvn -q dependency:get -Dartifact="org.apache.hudi:hudi-spark3.5-bundle_2.12:${HUDI_VERSION}" -Dtransitive=false >/dev/null \
                || echo "setup: Maven could not fetch Hudi ${HUDI_VERSION}'s Spark bundle; its conformance tests cannot run" >&2
        else
            echo "setup: no mvn; the Hudi conformance tests need Hudi's Spark bundles from Maven Central" >&2
        fi
    done
    if [ ! -x .cache/hudi-spark/venv/bin/python ]; then
        "$PYTHON" -m venv .cache/hudi-spark/venv
    fi
    .cache/hudi-spark/venv/bin/python -m pip install --quiet "pyspark==3.5.7"
    # Trino (the live Trino tests, tests/trino_services.py): its server from Maven Central (821 MB downloaded into ~/.m2),
    # unpacked under .cache/trino keeping only the Hive and Hudi plugins (about 410 MB); it runs on the Java 25 JDK.
    TRINO_VERSION=476  # the newest trino-server Maven Central serves here, as tests/trino_services.py names it
    if [ ! -d ".cache/trino/trino-server-${TRINO_VERSION}/lib" ]; then
        if command -v mvn >/dev/null && mvn -q dependency:get -Dartifact="io.trino:trino-server:${TRINO_VERSION}:tar.gz" -Dtransitive=false >/dev/null; then
            mkdir -p .cache/trino
            rm -rf ".cache/trino/trino-server-${TRINO_VERSION}.partial"
            mkdir ".cache/trino/trino-server-${TRINO_VERSION}.partial"
            tar xzf "$HOME/.m2/repository/io/trino/trino-server/${TRINO_VERSION}/trino-server-${TRINO_VERSION}.tar.gz" \
                -C ".cache/trino/trino-server-${TRINO_VERSION}.partial" --strip-components=1
            find ".cache/trino/trino-server-${TRINO_VERSION}.partial/plugin" -mindepth 1 -maxdepth 1 -type d \
                ! -name hive ! -name hudi -exec rm -rf {} +
            mv ".cache/trino/trino-server-${TRINO_VERSION}.partial" ".cache/trino/trino-server-${TRINO_VERSION}"
        else
            echo "setup: Maven could not fetch io.trino:trino-server:${TRINO_VERSION}; the live Trino tests cannot run" >&2
        fi
    fi
    # ZooKeeper (Debian's package) for the tests of Hudi's ZooKeeper lock provider, taken by Hudi's writer and by hudi-bridge.
    if [ ! -f /usr/share/java/zookeeper.jar ] && command -v apt-get >/dev/null; then
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends zookeeper; } >/dev/null 2>&1 \
            || echo "setup: apt-get could not install zookeeper; the ZooKeeper lock tests cannot run" >&2
    fi
    # Headless Chromium (Debian's package) for the test of the service's table-health page in a real browser.
    if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >/dev/null 2>&1 \
            || echo "setup: apt-get could not install chromium; the service page test cannot run" >&2
    fi
    # A Hive 4 standalone metastore (Maven Central: its runtime by tests/hive4/pom.xml, its schema scripts from the release's
    # bin tarball) on PostgreSQL (Debian's package), for the Hive sync tests against Hive 4 (tests/hive4_services.py).
    if command -v mvn >/dev/null && [ ! -d .cache/hive4/lib ]; then
        mkdir -p .cache/hive4
        if mvn -q -f tests/hive4/pom.xml dependency:copy-dependencies -DoutputDirectory="$PWD/.cache/hive4/lib.partial" -DincludeScope=runtime >/dev/null 2>&1 \
            && mvn -q dependency:get -Dartifact=org.apache.hive:hive-standalone-metastore-server:4.0.1:tar.gz:bin -Dtransitive=false >/dev/null 2>&1 \
            && tar xzf ~/.m2/repository/org/apache/hive/hive-standalone-metastore-server/4.0.1/hive-standalone-metastore-server-4.0.1-bin.tar.gz \
                -C .cache/hive4 apache-hive-metastore-4.0.1-bin/scripts; then
            mv .cache/hive4/lib.partial .cache/hive4/lib
        else
            echo "setup: Maven could not fetch Hive 4.0.1's standalone metastore; the Hive 4 sync tests cannot run" >&2
        fi
    fi
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v apt-get >/dev/null; then
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql; } >/dev/null 2>&1 \
            || echo "setup: apt-get could not install postgresql; the Hive 4 sync tests cannot run" >&2
    fi
    # Azurite (Azure Storage's emulator, from the npm registry) for the Azure tests; without npm they are skipped.
    if command -v npm >/dev/null && [ ! -x .cache/azurite/node_modules/.bin/azurite-blob ]; then
        npm install --silent --no-audit --no-fund --prefix .cache/azurite azurite@3 >/dev/null 2>&1 \
            || echo "setup: npm could not install Azurite; the Azure tests will be skipped" >&2
    fi
fi
