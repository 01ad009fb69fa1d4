"""The service's plans on every table shape Apache Hudi wrote for the slow tier
(each release's), predicate by predicate: the same file slices as the local planner."""

from __future__ import annotations

from typing import Any

import pytest

from engine_bridge.service import ServiceConfig, TableEntry
from listers import plan
from listers.service_client import ServiceClient
from tests.hudi_oracle import RELEASES, missing_setup, release_shapes, tables
from tests.needs import require
from tests.test_service import serving

pytestmark = [pytest.mark.services, pytest.mark.slow]


@pytest.mark.parametrize("release", list(RELEASES))
def test_the_service_plans_every_shape_hudi_wrote_as_the_local_planner(release: str) -> None:
    require(missing_setup(release), f"Hudi {release}'s tables")
    written: dict[str, tuple[Any, dict[str, Any]]] = tables(release_shapes(release), release)
    usable = {name: (path, oracle) for name, (path, oracle) in written.items() if "write_error" not in oracle}
    config = ServiceConfig(tuple(TableEntry(name, str(path)) for name, (path, _) in usable.items()))
    compared = 0
    with serving(config) as (url, _):
        client = ServiceClient(url)
        for name, (path, oracle) in usable.items():
            for predicate in oracle["truth"]:
                asked = client.plan(name, predicate)
                assert [s.to_wire() for s in asked.plan.files] == [s.to_wire() for s in plan(str(path), predicate).files], (name, predicate)
                compared += 1
    assert compared >= 5 * len(usable)
