"""The table-health pages: HTML with inline SVG charts drawn here from the
same values the API returns (`health.compute_health`), and a plan explainer
whose few lines of script ask the plan API and draw the funnel. Nothing is
fetched from elsewhere: no CDN, no web fonts; the Content-Security-Policy
allows this page's own script and style (by nonce) and requests to itself."""

from __future__ import annotations

import json
import secrets
from datetime import datetime
from html import escape
from typing import Any

LANES = ("commit", "deltacommit", "replacecommit", "clustering", "compaction", "logcompaction", "clean", "rollback", "restore",
         "savepoint", "indexing")
COLOURS = {"commit": "#2563eb", "deltacommit": "#0891b2", "replacecommit": "#7c3aed", "clustering": "#9333ea", "compaction": "#16a34a",
           "logcompaction": "#65a30d", "clean": "#ca8a04", "rollback": "#dc2626", "restore": "#be123c", "savepoint": "#475569",
           "indexing": "#0f766e"}
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;max-width:1100px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee;white-space:nowrap}
td.num{text-align:right}code{background:#f4f4f5;padding:1px 4px}
.bar{fill:#2563eb}.pending{fill:#fff;stroke-width:2}.lane{font-size:11px;fill:#555}
.warn{color:#b45309}.ok{color:#15803d}.bad{color:#b91c1c}
textarea{width:100%;font:13px monospace}#funnel td.barcell{width:320px}#funnel .fill{background:#2563eb;height:10px}
"""


def page(title: str, body: str, nonce: str) -> str:
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(title)}</title>"
            f"<style nonce=\"{nonce}\">{STYLE}</style></head><body>{body}</body></html>")


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def content_security_policy(nonce: str) -> str:
    return (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; "
            "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def index_page(tables: list[dict[str, Any]], nonce: str) -> str:
    rows = "".join(
        f"<tr data-table=\"{escape(t['name'])}\"><td><a href=\"/tables/{escape(t['name'])}\">{escape(t['name'])}</a></td>"
        f"<td>{escape(str(t.get('table_type', '')))}</td><td class=num>{escape(str(t.get('table_version', '')))}</td>"
        f"<td>{escape(str(t.get('latest_completed') or '–'))}</td><td>{escape(str(t.get('error', '')))}</td></tr>"
        for t in tables)
    body = (f"<h1>hudi-bridge: tables served</h1><table id=tables><tr><th>table</th><th>type</th><th>version</th>"
            f"<th>latest completed instant</th><th></th></tr>{rows}</table>"
            "<p>API: <a href=\"/openapi.json\">/openapi.json</a> · <a href=\"/metrics\">/metrics</a></p>")
    return page("hudi-bridge", body, nonce)


def _instant_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text[:17].ljust(17, "0"), "%Y%m%d%H%M%S%f")
    except ValueError:
        return None


def timeline_svg(timeline: list[dict[str, Any]], width: int = 1000) -> str:
    """One lane per action, a dot per instant placed by its requested time; pending instants hollow."""
    lanes = [lane for lane in LANES if any(row["action"] == lane for row in timeline)]
    lanes += sorted({row["action"] for row in timeline} - set(lanes))
    times = [t for row in timeline if (t := _instant_time(row["requested_time"])) is not None]
    if not times:
        return "<p id=timeline-empty>No instants yet.</p>"
    first, last = min(times), max(times)
    span = (last - first).total_seconds() or 1.0
    left, lane_height = 110, 22
    height = lane_height * len(lanes) + 30
    parts = [f"<svg id=timeline role=img aria-label=\"timeline\" width={width} height={height} viewBox=\"0 0 {width} {height}\">"]
    for i, lane in enumerate(lanes):
        y = 15 + i * lane_height
        parts.append(f"<text class=lane x=0 y={y + 4}>{escape(lane)}</text><line x1={left} x2={width - 10} y1={y} y2={y} stroke=#eee />")
    for row in timeline:
        when = _instant_time(row["requested_time"])
        if when is None:
            continue
        x = left + (width - left - 20) * (when - first).total_seconds() / span
        y = 15 + lanes.index(row["action"]) * lane_height
        colour = COLOURS.get(row["action"], "#555")
        pending = row["state"] != "COMPLETED"
        fill = f"class=pending stroke=\"{colour}\"" if pending else f"fill=\"{colour}\""
        parts.append(f"<circle data-action=\"{escape(row['action'])}\" data-state=\"{escape(row['state'])}\" cx={x:.1f} cy={y} r=5 {fill}>"
                     f"<title>{escape(row['action'])} {escape(row['requested_time'])} {escape(row['state'].lower())}</title></circle>")
    parts.append(f"<text class=lane x={left} y={height - 2}>{first:%Y-%m-%d %H:%M:%S}</text>"
                 f"<text class=lane x={width - 10} y={height - 2} text-anchor=end>{last:%Y-%m-%d %H:%M:%S}</text></svg>")
    return "".join(parts)


def bars_svg(element_id: str, items: list[tuple[str, int]], width: int = 520) -> str:
    """Horizontal bars, one per (label, value), each value written beside its bar."""
    top = max((v for _, v in items), default=0) or 1
    row, left = 20, 130
    parts = [f"<svg id={element_id} role=img width={width} height={row * len(items) + 4}>"]
    for i, (label, value) in enumerate(items):
        y = i * row
        length = (width - left - 70) * value / top
        parts.append(f"<g data-label=\"{escape(label)}\" data-value=\"{value}\"><text class=lane x=0 y={y + 14}>{escape(label)}</text>"
                     f"<rect class=bar x={left} y={y + 4} width={length:.1f} height=12 />"
                     f"<text class=lane x={left + length + 6:.1f} y={y + 14}>{value:,}</text></g>")
    parts.append("</svg>")
    return "".join(parts)


def _validate_html(report: dict[str, Any] | None) -> str:
    if report is None:
        return "<p id=validate data-ok=none>Not validated since the service started. <code>POST /v1/tables/NAME/validate</code> runs it.</p>"
    verdict = "agree" if report.get("ok") else "differ"
    lines = "".join(f"<li>{escape(d)}</li>" for d in (report.get("differences") or [])[:20])
    unavailable = f" ({escape(report['unavailable'])})" if report.get("unavailable") else ""
    return (f"<p id=validate data-ok=\"{str(bool(report.get('ok'))).lower()}\" class=\"{'ok' if report.get('ok') else 'bad'}\">"
            f"Last validate at {escape(str(report.get('at')))} ({report.get('seconds')} s): metadata table and storage {verdict}"
            f"{unavailable}.</p><ul>{lines}</ul>")


def table_page(name: str, health: dict[str, Any], nonce: str, where: str = "") -> str:
    summary, mdt = health["table"], health["metadata_table"]
    facts = [("type", summary["table_type"]), ("table version", summary["table_version"]),
             ("partition fields", ", ".join(summary["partition_fields"]) or "none"), ("record key", ", ".join(summary["record_key_fields"])),
             ("latest completed", summary["latest_completed"] or "–"), ("instants", summary["instants"]),
             ("partitions", health["partition_count"]), ("file groups", health["file_groups"]),
             ("small base files (< 100 MiB)", health["small_files"]), ("skew (largest partition / mean)", health["skew"] or "–")]
    facts_html = "".join(f"<tr><th>{escape(k)}</th><td id=\"fact-{escape(k.split(' (')[0].replace(' ', '-'))}\">{escape(str(v))}</td></tr>"
                         for k, v in facts)
    actions = "".join(f"<tr data-action=\"{escape(k)}\" data-count={v}><td>{escape(k)}</td><td class=num>{v}</td></tr>"
                      for k, v in health["instants_by_action"].items())
    biggest = sorted(health["partitions"], key=lambda p: -p["bytes"])[:20]
    behind = mdt["behind"]
    lag = ("no metadata table is read" if behind is None else
           "<span class=ok>in step with the data timeline</span>" if behind == 0 else
           f"<span class=warn>{behind} data instant(s) behind: {escape(', '.join(mdt['behind_instants'][:5]))}</span>")
    body = f"""<p><a href="/">tables</a></p><h1>{escape(name)} <small>({escape(summary['name'])})</small></h1>
<table id=facts>{facts_html}</table>
<h2>Timeline</h2>{timeline_svg(health['timeline'])}
<table id=actions><tr><th>action, state</th><th>instants</th></tr>{actions}</table>
<h2>Base file sizes</h2>{bars_svg('sizes', [(b['bucket'], b['files']) for b in health['base_file_sizes']])}
<h2>Largest partitions (bytes)</h2>{bars_svg('partitions', [(p['partition'] or '(none)', p['bytes']) for p in biggest])}
<h2>Metadata table</h2><p id=mdt-partitions data-count={len(mdt['partitions'])}>Partitions kept: {escape(', '.join(mdt['partitions']) or 'none')}</p>
<p id=mdt-lag data-behind="{'' if behind is None else behind}">Lag: {lag}</p><p>Listing: {escape(mdt['listing'])}</p>
{_validate_html(health.get('last_validate'))}
<h2>Plan explainer</h2>
<form id=explain><textarea id=where rows=2 name=where placeholder="city = 'sf' AND fare > 20">{escape(where)}</textarea>
<select id=dialect name=dialect><option>spark</option><option>trino</option><option>hive</option><option>presto</option></select>
<button type=submit>Explain</button></form>
<table id=funnel data-state=idle></table><p id=funnel-summary></p><ul id=not-used></ul>
<script nonce="{nonce}">{EXPLAINER.replace('TABLE_NAME', _js_string(name))}</script>"""
    return page(f"{name}: hudi-bridge", body, nonce)


def _js_string(text: str) -> str:
    """A JavaScript string literal safe inside a <script> element."""
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


EXPLAINER = """
const table = TABLE_NAME;
const funnel = document.getElementById('funnel'), summary = document.getElementById('funnel-summary');
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td; }
async function explain(where, dialect) {
  funnel.dataset.state = 'running'; funnel.replaceChildren(); summary.textContent = '';
  const answer = await fetch('/v1/tables/' + encodeURIComponent(table) + '/plan', {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify({filter: where, dialect: dialect, page_size: 1})});
  const body = await answer.json();
  if (!answer.ok) { summary.textContent = body.error.code + ': ' + body.error.message; funnel.dataset.state = 'error'; return; }
  const head = funnel.insertRow(); ['stage', 'kept', 'of', '', 'requests', 'ms'].forEach(t => cell(head, t));
  for (const stage of body.stages) {
    const row = funnel.insertRow(); row.className = 'stage'; row.dataset.stage = stage.stage;
    cell(row, stage.stage); cell(row, stage.kept + ' ' + stage.unit, 'num kept'); cell(row, stage.of + ' ' + stage.of_unit, 'num of');
    const bar = cell(row, '', 'barcell'); const fill = document.createElement('div'); fill.className = 'fill';
    fill.style.width = (stage.of ? 100 * stage.kept / stage.of : 100) + '%'; bar.appendChild(fill);
    cell(row, String(stage.requests), 'num'); cell(row, (1000 * stage.seconds).toFixed(1), 'num');
  }
  const notUsed = document.getElementById('not-used'); notUsed.replaceChildren();
  for (const reason of body.not_used) { const li = document.createElement('li'); li.textContent = 'not used: ' + reason; notUsed.appendChild(li); }
  summary.dataset.slices = body.file_slices_total;
  summary.textContent = body.file_slices_total + ' candidate file slice(s); ' + (body.requests.total || 0) + ' storage requests, '
    + (body.requests.bytes_read || 0) + ' bytes read; residual: ' + body.residual;
  funnel.dataset.state = 'done';
}
document.getElementById('explain').addEventListener('submit', e => { e.preventDefault();
  explain(document.getElementById('where').value, document.getElementById('dialect').value); });
if (document.getElementById('where').value) explain(document.getElementById('where').value, 'spark');
"""
