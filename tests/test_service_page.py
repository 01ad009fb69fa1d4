"""The service's table-health page in a real browser (headless Chromium from
Debian's packages): the figures it shows are the API's, the plan explainer
draws the funnel the plan API returns, and screenshots are written for a
person to look at (`.cache/screenshots/`)."""

from __future__ import annotations

import shutil
import subprocess
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from engine_bridge.service import ServiceConfig, TableEntry
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import build_sample_table
from tests.conftest import REPO
from tests.needs import require
from tests.test_service import call, serving

SCREENSHOTS = REPO / ".cache" / "screenshots"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browse(url: str, profile: Path, screenshot: Path | None = None) -> str:
    """The DOM after the page's script ran (or, with `screenshot`, a PNG of the page)."""
    browser = chromium()
    assert browser is not None
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--virtual-time-budget=15000", "--window-size=1200,1700"]
    args += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*args, url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Elements(HTMLParser):
    """Every element's tag, attributes and text (its own and its children's)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str], list[str]]] = []
        self.open: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        text: list[str] = []
        self.found.append((tag, {k: v or "" for k, v in attrs}, text))
        if tag not in ("circle", "rect", "line", "meta", "br", "input", "img"):
            self.open.append(text)

    def handle_endtag(self, tag: str) -> None:
        if self.open and tag not in ("circle", "rect", "line", "meta", "br", "input", "img"):
            self.open.pop()

    def handle_data(self, data: str) -> None:
        for text in self.open:
            text.append(data)

    def where(self, **wanted: str) -> list[tuple[str, dict[str, str], str]]:
        return [(tag, attrs, "".join(text).strip()) for tag, attrs, text in self.found
                if all(attrs.get(k.replace("_", "-")) == v for k, v in wanted.items())]


def parse(dom: str) -> Elements:
    elements = Elements()
    elements.feed(dom)
    return elements


@pytest.fixture(scope="module")
def page_service(tmp_path_factory: pytest.TempPathFactory) -> Any:
    require(None if chromium() else "no chromium (scripts/setup.sh --test installs Debian's)", "the service page test in Chromium")
    path = str(tmp_path_factory.mktemp("page") / "trips")
    build_sample_table(path, "MERGE_ON_READ", 8)
    MetadataTableWriter(path).build()
    with serving(ServiceConfig((TableEntry("trips", path),))) as (url, _):
        yield url


def test_the_page_shows_the_apis_figures_and_explains_a_plan(page_service: str, tmp_path: Path) -> None:
    url = page_service
    status, report, _ = call(f"{url}/v1/tables/trips/validate", "POST")
    assert status == 200 and report["ok"], report
    status, health, _ = call(f"{url}/v1/tables/trips/health")
    assert status == 200
    where = "city = 'chennai' AND fare > 20"
    status, planned, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"filter": where})
    assert status == 200

    page = parse(browse(f"{url}/tables/trips?where={urllib.parse.quote(where)}", tmp_path / "profile"))
    [(_, funnel, _)] = page.where(id="funnel")
    assert funnel["data-state"] == "done"
    rows = page.where(**{"class": "stage"})
    assert [attrs["data-stage"] for _, attrs, _ in rows] == [s["stage"] for s in planned["stages"]]
    kept = [text for _, attrs, text in page.where(**{"class": "num kept"})]
    assert kept == [f"{s['kept']} {s['unit']}" for s in planned["stages"]]
    [(_, summary, text)] = page.where(id="funnel-summary")
    assert summary["data-slices"] == str(planned["file_slices_total"]) and f"residual: {planned['residual']}" in text

    assert page.where(id="fact-file-groups")[0][2] == str(health["file_groups"])
    assert page.where(id="fact-partitions")[0][2] == str(health["partition_count"])
    assert page.where(id="fact-instants")[0][2] == str(health["table"]["instants"])
    bars = {attrs["data-label"]: int(attrs["data-value"]) for tag, attrs, _ in page.found if tag == "g" and "data-label" in attrs}
    assert all(bars[b["bucket"]] == b["files"] for b in health["base_file_sizes"])
    actions = {attrs["data-action"]: int(attrs["data-count"]) for tag, attrs, _ in page.found if tag == "tr" and "data-action" in attrs}
    assert actions == health["instants_by_action"]
    dots = [attrs for tag, attrs, _ in page.found if tag == "circle"]
    assert len(dots) == len(health["timeline"])
    assert page.where(id="validate")[0][1]["data-ok"] == "true"
    assert page.where(id="mdt-lag")[0][1]["data-behind"] == str(health["metadata_table"]["behind"])

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, address in (("service-table-page.png", f"{url}/tables/trips?where={urllib.parse.quote(where)}"),
                          ("service-index-page.png", f"{url}/")):
        shot = SCREENSHOTS / name
        shot.unlink(missing_ok=True)
        browse(address, tmp_path / "profile", shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_a_refused_predicate_is_said_on_the_page(page_service: str, tmp_path: Path) -> None:
    page = parse(browse(f"{page_service}/tables/trips?where={urllib.parse.quote('nope = 1')}", tmp_path / "profile"))
    [(_, funnel, _)] = page.where(id="funnel")
    assert funnel["data-state"] == "error"
    [(_, _, text)] = page.where(id="funnel-summary")
    assert text.startswith("refused: ") and "nope" in text
    index = parse(browse(f"{page_service}/", tmp_path / "profile"))
    assert [attrs["data-table"] for tag, attrs, _ in index.found if tag == "tr" and "data-table" in attrs] == ["trips"]
