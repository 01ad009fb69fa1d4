"""Shared test helpers: the real Hudi fixture tables and small builders."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from hypothesis import settings

# Hypothesis: CI runs 5,000 derandomised cases per property (reproducible, and
# what the acceptance criteria count); local runs a quicker random sample.
# HYPOTHESIS_PROFILE=ci locally reproduces CI.
settings.register_profile("ci", max_examples=5000, derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures" / "hudi-tables"
FIXTURE_ZIPS = sorted(FIXTURES.glob("*.zip")) if FIXTURES.is_dir() else []
NO_FIXTURES = "../shared/fixtures/hudi-tables is absent (a clone of the project alone does not have it)"

requires_fixtures = pytest.mark.skipif(not FIXTURE_ZIPS, reason=NO_FIXTURES)


def fixture_ids() -> list[str]:
    return [z.stem for z in FIXTURE_ZIPS] or ["no-fixtures"]


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All fixture zips unpacked once per session into a temporary folder."""
    if not FIXTURE_ZIPS:
        pytest.skip(NO_FIXTURES)
    root = tmp_path_factory.mktemp("hudi-fixtures")
    for archive in FIXTURE_ZIPS:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
            zf.extractall(root / archive.stem, members)
    return root


def table_path(root: Path, stem: str) -> str:
    """The single top-level table folder inside an unpacked fixture."""
    folders = [p for p in (root / stem).iterdir() if p.is_dir()]
    assert len(folders) == 1, f"{stem}: expected one table folder, found {folders}"
    return str(folders[0])


@pytest.fixture
def fixture_table(request: pytest.FixtureRequest, fixture_root: Path) -> str:
    return table_path(fixture_root, request.param)


# Real Hive services, started once per session on 127.0.0.1 -----------------------
from tests.azure_services import azure_server  # noqa: E402,F401  (session fixture)
from tests.hive4_services import hive4_metastore, hms  # noqa: E402,F401  (session fixture, and each metastore in turn)
from tests.hive_services import hiveserver2, metastore, spark, spark_connect  # noqa: E402,F401  (session fixtures)
from tests.s3_services import s3_server  # noqa: E402,F401  (session fixture)
from tests.trino_services import trino  # noqa: E402,F401  (session fixture)
from tests.zookeeper_services import zookeeper  # noqa: E402,F401  (session fixture)

JAVA_FIXTURES = {"metastore", "hive4_metastore", "hms", "hiveserver2", "spark", "spark_connect", "trino", "zookeeper"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whatever uses a Java service is a `services` test, marked or not."""
    for item in items:
        if JAVA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
