"""summary.html of a night: self-contained (inline CSS and SVG, no scripts, no external URLs).

Contract: `summary_html(summary, out_dir)` returns the page: the plans table (verdict,
runs, anomalies, throughput, p50/p99 latency), the runs table (each row links to its run's
report.html, or its run dir, by a path relative to `out_dir`; failures show the replay
command), the trend table (one column per night) and two inline SVG plots over nights: per
plan throughput and per plan anomaly count. Every text is HTML-escaped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date as Date
from html import escape
from pathlib import Path
from typing import Any

from harness.report.svg import PALETTE, Chart

_CSS = """body{font:14px/1.4 sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;
margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left}
th{background:#f3f3f3}.as-expected{background:#e3f5e6}.unexpected,.error{background:#fbe0e0}
.skipped{background:#f0f0f0;color:#777}code{font-size:12px}.num{text-align:right}"""


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _lat(m: Mapping[str, Any] | None, key: str) -> str:
    return _fmt((m or {}).get(key), 1)


def _link(run_dir: str | None, out_dir: Path) -> str:
    if not run_dir:
        return "–"
    target = Path(run_dir) / "report.html"
    target = target if target.is_file() else Path(run_dir)
    rel = os.path.relpath(target, out_dir)
    name = f"{Path(run_dir).parent.name}/{Path(run_dir).name}"
    return f'<a href="{escape(rel)}">{escape(name)}</a>'


def _plans_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for label, p in summary["plans"].items():
        v = p["verdict"]
        rows.append(
            f'<tr class="{escape(v)}"><td>{escape(label)}</td><td>{escape(v)}</td>'
            f'<td class="num">{p["runs"]}</td><td class="num">{p["skipped"]}</td>'
            f'<td class="num">{_fmt(p.get("anomalies_total"))}</td>'
            f'<td class="num">{_fmt(p.get("acked"))}</td>'
            f'<td class="num">{_fmt(p.get("throughput"))}</td>'
            f'<td class="num">{_lat(p.get("latency_ms"), "p50")}</td>'
            f'<td class="num">{_lat(p.get("latency_ms"), "p99")}</td></tr>')
    return ("<table><tr><th>plan</th><th>verdict</th><th>runs</th><th>skipped</th>"
            "<th>anomalies</th><th>acked</th><th>acked/s</th><th>p50 ms</th><th>p99 ms</th>"
            "</tr>" + "".join(rows) + "</table>")


def _runs_table(summary: Mapping[str, Any], out_dir: Path) -> str:
    rows = []
    for r in summary["runs"]:
        found = {a: n for a, n in (r.get("anomalies") or {}).items() if n}
        detail = ", ".join(f"{a}={n}" for a, n in found.items())
        if r.get("reason"):
            detail = f"{detail}; {r['reason']}" if detail else r["reason"]
        detail = escape(detail)
        if r.get("replay"):
            detail += f"<br><code>{escape(r['replay'])}</code>"
        rows.append(
            f'<tr class="{escape(r["verdict"])}"><td class="num">{r["index"]}</td>'
            f'<td>{escape(r["label"])}</td><td class="num">{r["seed"]}</td>'
            f'<td>{escape(r["verdict"])}</td><td class="num">{_fmt(r.get("exit_code"))}</td>'
            f'<td class="num">{_fmt(r.get("throughput"))}</td>'
            f'<td class="num">{_lat(r.get("latency_ms"), "p50")}</td>'
            f'<td class="num">{_lat(r.get("latency_ms"), "p99")}</td>'
            f'<td>{_link(r.get("run_dir"), out_dir)}</td><td>{detail}</td></tr>')
    return ("<table><tr><th>#</th><th>plan</th><th>seed</th><th>verdict</th><th>exit</th>"
            "<th>acked/s</th><th>p50 ms</th><th>p99 ms</th><th>run</th><th>details</th></tr>"
            + "".join(rows) + "</table>")


def _trend_table(trend: Mapping[str, Any]) -> str:
    head = "".join(f"<th>{escape(d)}</th>" for d in trend["nights"])
    rows = []
    for label, points in trend["plans"].items():
        cells = []
        for pt in points:
            if pt is None:
                cells.append("<td>–</td>")
                continue
            v = pt.get("verdict") or "?"
            cells.append(f'<td class="{escape(v)}">{escape(v)}<br>{_fmt(pt.get("throughput"))}'
                         f' acked/s<br>{_fmt(pt.get("anomalies_total"))} anomalies</td>')
        rows.append(f"<tr><td>{escape(label)}</td>{''.join(cells)}</tr>")
    return f"<table><tr><th>plan</th>{head}</tr>{''.join(rows)}</table>"


def _days(nights: list[str]) -> list[float]:
    try:
        first = Date.fromisoformat(nights[0])
        return [float((Date.fromisoformat(d) - first).days) for d in nights]
    except ValueError:  # a hand-edited date: fall back to night numbers
        return [float(i) for i in range(len(nights))]


def trend_chart(trend: Mapping[str, Any], metric: str, title: str, y_label: str) -> str:
    nights = list(trend["nights"])
    xs = _days(nights)
    series = {label: [(x, pt[metric]) for x, pt in zip(xs, pts, strict=True)
                      if pt and pt.get(metric) is not None]
              for label, pts in trend["plans"].items()}
    ys = [y for pts in series.values() for _, y in pts]
    chart = Chart(title, (min(xs), max(max(xs), min(xs) + 1)), (0, max(ys or [1]) * 1.1 or 1),
                  x_label=f"days since {nights[0]}", y_label=y_label, height=240,
                  ident=f"trend-{metric}")
    for i, (label, pts) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        chart.line(pts, colour, label=label)
        chart.points(pts, colour, r=3)
    chart.note(f"nights: {', '.join(nights[-8:])}")
    return chart.render()


def summary_html(summary: Mapping[str, Any], out_dir: Path) -> str:
    failed = summary.get("failed") or []
    status = (f"{len(failed)} plan(s) failed: {', '.join(failed)}" if failed
              else "every plan ran as expected (or was skipped)")
    facts = (f"suite {summary.get('suite')}, budget {_fmt(summary.get('budget_s'), 0)} s, "
             f"elapsed {_fmt(summary.get('elapsed_s'), 0)} s, store {summary.get('store')}")
    warnings = "".join(f"<li>{escape(w)}</li>" for w in summary.get("warnings") or [])
    trend = summary["trend"]
    return (
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
        f"<title>highwater nightly {escape(summary['date'])}</title><style>{_CSS}</style>"
        f"</head><body><h1>highwater nightly {escape(summary['date'])}</h1>"
        f"<p><b>{escape(status)}</b><br>{escape(facts)}</p>"
        + (f"<ul>{warnings}</ul>" if warnings else "")
        + "<h2>Plans</h2>" + _plans_table(summary)
        + "<h2>Runs</h2>" + _runs_table(summary, out_dir)
        + "<h2>Trend</h2>" + _trend_table(trend)
        + trend_chart(trend, "throughput", "throughput per plan", "acked sends/s")
        + trend_chart(trend, "anomalies_total", "anomalies per plan", "anomalies")
        + "</body></html>\n"
    )
