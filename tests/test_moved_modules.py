"""The module paths of before `metadata/` was cut into packages, and names that moved when a long module was split,
still import for one release: the same objects, each with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from metadata._moved import MOVED


def test_every_old_module_path_is_the_new_module_with_a_warning() -> None:
    # A fresh interpreter: an old path imported once stays in sys.modules, and warns only the first time.
    code = (
        "import importlib, json, warnings\n"
        "from metadata._moved import MOVED\n"
        "found = {}\n"
        "for old, new in MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as said:\n"
        "        warnings.simplefilter('always')\n"
        "        module = importlib.import_module(old)\n"
        "    found[old] = [module is importlib.import_module(new), [str(w.message) for w in said if w.category is DeprecationWarning]]\n"
        "print(json.dumps(found))\n")
    import json

    found = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert len(found) == len(MOVED) >= 30
    for old, (same, said) in found.items():
        assert same, old
        assert said == [f"{old} is now {MOVED[old]}; the old path goes in the release after next"], (old, said)


def test_from_metadata_import_an_old_module_name() -> None:
    code = "import warnings; warnings.simplefilter('error'); from metadata import arrow_values"
    refused = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert refused.returncode != 0 and "metadata.arrow_values is now metadata.util.arrow_values" in refused.stderr
    assert subprocess.run([sys.executable, "-c", "from metadata import arrow_values; print(arrow_values.__name__)"],
                          capture_output=True, text=True, check=True).stdout.strip() == "metadata.util.arrow_values"


@pytest.mark.parametrize(("old", "name", "new"), [
    ("expressions.tree", "Visitor", "expressions.visitors"),
    ("expressions.sql_glot", "to_sql", "expressions.sql_print"),
    ("metadata.mdt.hfile_reader", "gunzip_at_most", "metadata.mdt.hfile_blocks"),
    ("metadata.mdt.hfile_reader", "prefix_successor", "metadata.mdt.hfile_index"),
    ("metadata.mdt.reader", "build_coverage", "metadata.mdt.synced_instants"),
    ("metadata.mdt.record_schema", "files_record", "metadata.mdt.record_builders"),
    ("metadata.mdt.stats_columns", "pivot", "metadata.mdt.stats_pivot"),
])
def test_a_name_a_split_moved_imports_from_its_old_module(old: str, name: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} is now {new}.{name}"):
        found = getattr(importlib.import_module(old), name)
    assert found is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError):
        importlib.import_module(old).no_such_name  # noqa: B018 - only names that moved are found


def test_the_packages_own_names_import_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from metadata.storage import Storage, join
        from metadata.table import HudiTable, TableConfig
        from metadata.timeline import Instant, Timeline
    assert (Storage.__module__, join.__module__, HudiTable.__module__, TableConfig.__module__, Timeline.__module__, Instant.__module__) == (
        "metadata.storage.storage", "metadata.storage.paths", "metadata.table.hudi_table", "metadata.table.config",
        "metadata.timeline.active", "metadata.timeline.instant")
