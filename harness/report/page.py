"""report.html from a RunData: one self-contained page, readable offline.

Contract: `render(data) -> str` returns the whole page — inline CSS, inline SVG plots, and a
few lines of inline script that only open the collapsed history excerpt an example link points
into (the page is fully readable without it). Nothing is fetched. Every value from the run's
files is HTML-escaped. Anchors: `#op-<index>` is the history line with that index (present for
every example index of results.json and the lines around it), `#anomalies`, `#plots`,
`#partition-<topic>-<n>`, `#loop-lag` (only when a broker's event loop lagged >= 1 s),
`#replicas` (the collected replica logs compared offset by offset,
when the run kept 2+ replicas' data), `#history`, `#plan`.
"""

from __future__ import annotations

import json
import statistics
from html import escape
from typing import Any

from harness.checker.expectations import (
    CONTROLLER_COMMIT_WHILE_CUT,
    DIVERGED_OFFSETS,
    INVARIANT_VIOLATIONS,
    UNCONVERGED_REPLICAS,
    ExpectationError,
    run_verdict,
)
from harness.checker.history import ANOMALIES, INFORMATIONAL
from harness.checker.replica_logs import diverged_offsets, partitions, replica_logs
from harness.report.data import (
    NS,
    FaultWindow,
    RunData,
    example_indexes,
    isr_elr_changes,
    thin,
    throughput,
)
from harness.report.svg import OK, PALETTE, TYPE_COLOURS, Chart
from harness.store.states import StateSample

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;
 color:#222;max-width:1000px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid
 #ddd;padding-bottom:3px} h3{font-size:14px;margin:16px 0 4px}
.meta{color:#555} .meta code{color:#222}
.verdict{padding:10px 14px;border-radius:6px;font-size:16px;margin:14px 0}
.verdict.good{background:#e6f4ea;border:1px solid #2a9d4b}
.verdict.bad{background:#fdecea;border:1px solid #d62728}
.verdict.unknown{background:#fff6e0;border:1px solid #f0a202}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #ddd;padding:3px 8px;
 text-align:left;vertical-align:top} th{background:#f5f5f5}
tr.found td{background:#fdecea} tr.info-found td{background:#fff6e0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
a{color:#1f5fa8}
svg.chart{display:block;margin:8px 0;max-width:100%;height:auto}
details.excerpt{margin:4px 0;border:1px solid #ddd;border-radius:4px;padding:2px 6px}
details.excerpt summary{cursor:pointer;color:#1f5fa8}
.op{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
 word-break:break-all;padding:1px 4px}
.op .idx{color:#888;display:inline-block;min-width:6ch}
.op.example{background:#fff3bf} .op:target{outline:2px solid #d62728}
pre.plan{background:#f7f7f7;padding:8px;border:1px solid #ddd;overflow:auto;font-size:12px}
.warn{color:#8a5300}
"""

SCRIPT = """
function hwOpen(){var h=location.hash;if(!h)return;var e=document.getElementById(h.slice(1));
for(var p=e;p;p=p.parentElement){if(p.tagName==='DETAILS')p.open=true;}
if(e)e.scrollIntoView();}
window.addEventListener('hashchange',hwOpen);window.addEventListener('load',hwOpen);
"""


def _e(v: Any) -> str:
    return escape(str(v))


def render(data: RunData) -> str:
    plan = data.plan or {}
    title = plan.get("name") or data.run_dir.parent.name
    body = [
        f"<h1>highwater report: {_e(title)}</h1>",
        _meta(data),
        _verdict(data),
        _anomalies(data),
        _plots(data),
        _elections(data),
        _replicas(data),
        _history(data),
        _plan(data),
        _warnings(data),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>highwater: {_e(title)}</title><style>{CSS}</style>"
        f"<script>{SCRIPT}</script></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _meta(data: RunData) -> str:
    seed = data.seed
    parts = [
        f"run <code>{_e(data.run_dir)}</code>",
        f"seed <code id=\"seed\">{_e(seed) if seed is not None else 'none'}</code>",
        f"{data.ops} history ops, {len(data.sends)} sends, {data.polls} polls, "
        f"{len(data.faults)} fault windows, {data.end_s:.1f} s",
    ]
    desc = (data.plan or {}).get("description")
    if desc:
        parts.insert(0, _e(desc))
    version = (data.meta or {}).get("kafka_version")
    if version:
        switches = (data.meta or {}).get("version_switches") or {}
        detail = ", ".join(f"{k} {v}" for k, v in switches.items())
        parts.append(f'emulating Kafka <code id="kafka-version">{_e(version)}</code>'
                     + (f" ({_e(detail)})" if detail else ""))
    return '<p class="meta">' + "<br>".join(parts) + "</p>"


def _verdict(data: RunData) -> str:
    r = data.results
    if r is None:
        return ('<div class="verdict unknown" id="verdict">not checked: no results.json '
                "(run <code>highwater check RUN_DIR</code>)</div>")
    valid = r.get("valid")
    try:  # the run's verdict: the history's and the metadata check (expectations.run_verdict)
        judged = run_verdict(r)
        verdict, misses = judged.verdict, judged.misses
    except ExpectationError:
        verdict, misses = r.get("verdict", "?"), ()
    cls = "good" if verdict == "as-expected" else "bad"
    expected = r.get("expected") or {}
    exp = ", ".join(f"{_e(k)} {_e(v)}" for k, v in expected.items()) or "a valid history"
    missed = f"; missed: {_e('; '.join(misses))}" if misses else ""
    return (
        f'<div class="verdict {cls}" id="verdict"><b>{_e(verdict)}</b> — '
        f"history {'valid' if valid else 'INVALID'}; expected: {exp}{missed}</div>"
    )


def _anomalies(data: RunData) -> str:
    r = data.results
    if r is None:
        return ""
    anomalies = r.get("anomalies") or {}
    expected = r.get("expected") or {}
    rows = ["<tr><th>anomaly</th><th>count</th><th>expected</th><th>by partition</th>"
            "<th>examples (history indexes)</th></tr>"]
    names = list(ANOMALIES) + [a for a in anomalies if a not in ANOMALIES]
    for name in names:
        a = anomalies.get(name) or {}
        count = a.get("count", 0)
        cls = "" if not count else ("info-found" if name in INFORMATIONAL else "found")
        by_p = ", ".join(f"{_e(p)}: {_e(n)}" for p, n in (a.get("by_partition") or {}).items())
        examples = []
        for ex in a.get("examples") or []:
            ex = ex if isinstance(ex, list) else [ex]
            links = " ".join(f'<a href="#op-{int(i)}">{int(i)}</a>' for i in ex
                             if isinstance(i, int))
            examples.append(f"[{links}]")
        rows.append(
            f'<tr class="{cls}" id="anomaly-{_e(name)}"><td>{_e(name)}</td>'
            f'<td class="num">{_e(count)}</td><td>{_e(expected.get(name, ""))}</td>'
            f"<td>{by_p}</td><td>{' '.join(examples)}</td></tr>"
        )
    md = r.get("metadata-divergence")
    if isinstance(md, dict):  # harness.checker.metadata_check: nodes whose metadata image differs
        count = md.get("count", 0)
        by_p = ", ".join(f"{_e(p)}: {_e(n)}" for p, n in (md.get("by_partition") or {}).items())
        nodes = " ".join(f"[{_e(ex[0])} at {_e(ex[1])}]" for ex in md.get("examples") or []
                         if isinstance(ex, list) and len(ex) >= 2)
        unknown = md.get("unknown") or []
        note = f" not compared: {_e(', '.join(map(str, unknown)))}" if unknown else ""
        rows.append(
            f'<tr class="{"found" if count else ""}" id="anomaly-metadata-divergence">'
            f'<td>metadata-divergence</td><td class="num">{_e(count)}</td><td></td>'
            f"<td>{by_p}</td><td>{nodes}{note}</td></tr>"
        )
    for name in (CONTROLLER_COMMIT_WHILE_CUT, UNCONVERGED_REPLICAS, DIVERGED_OFFSETS,
                 INVARIANT_VIOLATIONS):
        c = r.get(name)
        if not isinstance(c, dict) or not isinstance(c.get("count"), int):
            continue
        count = c["count"]
        by_p = ", ".join(f"{_e(p)}: {_e(n)}" for p, n in (c.get("by_partition") or {}).items())
        shown = "; ".join(_e(ex) for ex in (c.get("examples") or []) if isinstance(ex, str))
        rows.append(
            f'<tr class="{"found" if count else ""}" id="anomaly-{_e(name)}">'
            f'<td>{_e(name)}</td><td class="num">{_e(count)}</td>'
            f"<td>{_e(expected.get(name, ''))}</td><td>{by_p}</td><td>{shown}</td></tr>"
        )
    stats = r.get("stats") or {}
    stat_cells = "".join(
        f"<tr><th>{_e(k)}</th><td class=\"num\">"
        f"{_e(json.dumps(v) if isinstance(v, dict) else v)}</td></tr>"
        for k, v in stats.items()
    )
    return (
        '<h2 id="anomalies">Anomalies</h2><table class="anomalies">' + "".join(rows)
        + "</table>" + _convergence(r.get(UNCONVERGED_REPLICAS))
        + '<h3>Stats</h3><table class="stats">' + stat_cells + "</table>"
    )


def _convergence(check: Any) -> str:
    """Per partition: how long after the final heal it converged (leader, full ISR, caught
    up) for good, or that it had not when the settle window ended (harness.checker.
    convergence)."""
    if not isinstance(check, dict) or not isinstance(check.get("recovery_s"), dict):
        return ""
    window = check.get("window_s")
    rows = ["<tr><th>partition</th><th>converged after the heal</th></tr>"]
    for p, t in check["recovery_s"].items():
        cell = f"{t:.1f} s" if isinstance(t, int | float) else (
            f"not within the {window:g} s window" if isinstance(window, int | float)
            else "not converged")
        rows.append(f'<tr class="{"" if t is not None else "found"}"><td>{_e(p)}</td>'
                    f"<td>{_e(cell)}</td></tr>")
    return ('<h3 id="convergence">Convergence after the heal</h3><table class="convergence">'
            + "".join(rows) + "</table>")


def _shade(chart: Chart, faults: list[FaultWindow]) -> None:
    for w in faults:
        tail = " (not stopped)" if w.open_ended else ""
        chart.shade(w.start_s, w.end_s, w.name + tail, title=w.label + tail)


def _plots(data: RunData) -> str:
    out = ['<h2 id="plots">Timelines</h2>']
    end = max(data.end_s, 1.0)
    if data.sends:
        shown, total = thin(data.sends)
        lat = [p.latency_ms for p in shown]
        chart = Chart("send latency", (0, end), (max(min(lat) * 0.7, 0.05), max(lat) * 1.4),
                      y_label="latency (ms)", log_y=True, css_class="chart latency",
                      ident="latency")
        _shade(chart, data.faults)
        for typ in ("ok", "fail", "info"):
            pts = [(p.time_s, p.latency_ms) for p in shown if p.type == typ]
            n = data.sends.by_type[typ]
            chart.points(pts, TYPE_COLOURS[typ], label=f"{typ} ({n})", css_class=f"pt {typ}")
        if len(shown) < total:
            chart.note(f"showing {len(shown)} of {total} sends (all fail/info kept)")
        out.append(chart.render())

        width, series = throughput(data.sends, end)
        top = max((v for s in series.values() for _, v in s), default=1.0)
        chart = Chart(f"send throughput ({width:g} s bins)", (0, end), (0, top * 1.1 or 1),
                      y_label="completions/s", css_class="chart throughput", ident="throughput")
        _shade(chart, data.faults)
        for typ in ("ok", "fail", "info"):
            chart.line(series[typ], TYPE_COLOURS[typ], label=typ, step=True)
        out.append(chart.render())
    else:
        out.append("<p>No sends in the history.</p>")
    if not data.states:
        out.append("<p>No broker-state samples (<code>states.jsonl</code>) recorded: "
                   "no HW/LEO timelines.</p>")
    for name, samples in sorted(data.states.items()):
        out.append(f'<h3 id="partition-{_e(name)}">{_e(name)}: HW and LEO per replica</h3>')
        out.append(_partition_chart(name, samples, data, end))
    out.append(_loop_lag(data, end))
    return "\n".join(out)


LOOP_LAG_DRAW_MS = 1000  # a broker's event loop blocked this long: heartbeats and clients waited


def _loop_lag(data: RunData, end: float) -> str:
    """Event-loop lag per broker, drawn only when some poll saw it reach LOOP_LAG_DRAW_MS."""
    by_node: dict[int, dict[int, int]] = {}
    for samples in data.states.values():
        for s in samples:
            if s.loop_lag_ms is not None:
                by_node.setdefault(s.node, {})[s.time] = s.loop_lag_ms
    worst = max((v for lags in by_node.values() for v in lags.values()), default=0)
    if worst < LOOP_LAG_DRAW_MS:
        return ""
    chart = Chart("broker event-loop lag", (0, end), (0, worst * 1.1), y_label="lag (ms)",
                  css_class="chart loop-lag", ident="loop-lag")
    _shade(chart, data.faults)
    for i, (node, lags) in enumerate(sorted(by_node.items())):
        pts = [(t / NS, v) for t, v in sorted(lags.items())]
        for j, seg in enumerate(_segments(pts)):
            chart.line(seg, PALETTE[i % len(PALETTE)], label=f"b{node}" if j == 0 else None,
                       width=1.5)
    return (f'<h3 id="loop-lag">Broker event-loop lag (max {worst} ms)</h3><p class="warn">'
            f"A broker's event loop was blocked for at least {LOOP_LAG_DRAW_MS} ms: heartbeats, "
            "metadata, replication and client requests all waited (issue 18).</p>"
            + chart.render())


def _elections(data: RunData, limit: int = 40) -> str:
    """Who led, with which ISR and ELR (KIP-966), as each leader reported it: one row per
    change of (leader, epoch, ISR, ELR)."""
    out = []
    for name, samples in sorted(data.states.items()):
        rows = [f'<tr><td class="num">{t:.1f}</td><td>b{node}</td><td class="num">{epoch}</td>'
                f"<td>{_e(list(isr))}</td><td>{_e(list(elr))}</td></tr>"
                for t, node, epoch, isr, elr in isr_elr_changes(samples)]
        if rows:
            more = f"<p>({len(rows) - limit} more)</p>" if len(rows) > limit else ""
            out.append(f'<h3 id="elections-{_e(name)}">{_e(name)}</h3><table class="anomalies">'
                       "<tr><th>s</th><th>leader</th><th>epoch</th><th>ISR</th><th>ELR</th></tr>"
                       + "".join(rows[:limit]) + f"</table>{more}")
    if data.controller_changes:
        # The KRaft controller epoch timeline, beside the partitions' leader epochs.
        rows = [f'<tr><td class="num">{t:.1f}</td><td>controller-{c}</td>'
                f'<td class="num">{epoch}</td></tr>' for t, c, epoch in data.controller_changes]
        more = f"<p>({len(rows) - limit} more)</p>" if len(rows) > limit else ""
        out.insert(0, '<h3 id="elections-controller">KRaft controller</h3>'
                   '<table class="anomalies"><tr><th>s</th><th>active controller</th>'
                   "<th>Raft epoch</th></tr>" + "".join(rows[:limit]) + f"</table>{more}")
    if not out:
        return ""
    return ('<h2 id="elections">Leaders, ISR and ELR</h2><p>As each leader reported them: '
            "who was elected, the ISR, and the eligible leader replicas (KIP-966; empty before "
            "Kafka 4.1); first the active KRaft controller and its Raft epoch, as the "
            "controllers reported them.</p>" + "".join(out))


def _replicas(data: RunData, examples: int = 20) -> str:
    """Replica logs as collected after the run: divergence no client had to read (L2)."""
    out = []
    for name in partitions(data.run_dir):
        logs = replica_logs(data.run_dir, name)
        if len(logs) < 2:
            continue
        diverged = diverged_offsets(logs)
        shared = set.intersection(*(set(log) for log in logs.values()))
        held = ", ".join(f"{_e(n)}: {min(log)}..{max(log)} ({len(log)} records)"
                         for n, log in logs.items())
        if not diverged:
            out.append(f'<p id="replicas-{_e(name)}"><b>{_e(name)}</b>: replicas agree on every '
                       f"offset two of them hold ({len(shared)} held by all). {held}</p>")
            continue
        nodes = list(logs)
        head = "".join(f"<th>{_e(n)}</th>" for n in nodes)
        rows = "".join(
            f'<tr><td class="num">{o}</td>'
            + "".join(f"<td>{_e(v.get(n, '—'))}</td>" for n in nodes) + "</tr>"
            for o, v in list(diverged.items())[:examples])
        out.append(f'<p id="replicas-{_e(name)}" class="bad"><b>{_e(name)}</b>: replicas '
                   f"diverge on disk at {len(diverged)} offset(s), first at offset "
                   f"{min(diverged)}. {held}</p><table class=\"anomalies\"><tr><th>offset</th>"
                   f"{head}</tr>{rows}</table>")
    if not out:
        return ""
    return ('<h2 id="replicas">Replicas on disk</h2><p>Each replica\'s log as collected after '
            "the run (valid batches; under the disk-fault layer only what reached the disk), "
            "compared offset by offset.</p>" + "".join(out))


def _segments(points: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """Split where sampling stopped for a while (the broker was down or cut off): a gap."""
    if len(points) < 3:
        return [points]
    diffs = [b[0] - a[0] for a, b in zip(points, points[1:], strict=False)]
    gap = max(1.0, 3 * statistics.median(diffs))
    segs, cur = [], [points[0]]
    for prev, p in zip(points, points[1:], strict=False):
        if p[0] - prev[0] > gap:
            segs.append(cur)
            cur = []
        cur.append(p)
    return segs + [cur]


def _partition_chart(name: str, samples: list[StateSample], data: RunData, end: float) -> str:
    top = max(max(s.leo for s in samples), max(s.hw for s in samples), 1)
    chart = Chart(f"{name} replicas", (0, end), (0, top * 1.08), y_label="offset",
                  css_class="chart replicas", ident=f"replicas-{name}")
    _shade(chart, data.faults)
    nodes = sorted({s.node for s in samples})
    for i, node in enumerate(nodes):
        colour = PALETTE[i % len(PALETTE)]
        mine = [s for s in samples if s.node == node]
        for j, seg in enumerate(_segments([(s.time / NS, s.hw) for s in mine])):
            chart.line(seg, colour, label=f"b{node} HW" if j == 0 else None, step=True, width=2)
        for j, seg in enumerate(_segments([(s.time / NS, s.leo) for s in mine])):
            chart.line(seg, colour, label=f"b{node} LEO" if j == 0 else None, step=True,
                       dash="5 3", width=1.2)
    for k, change in enumerate(data.leader_changes.get(name, [])):
        chart.vline(change.time_s, f"leader b{change.leader} (epoch {change.epoch})", OK,
                    css_class="leader-change", row=k)
    return chart.render()


def _history(data: RunData) -> str:
    examples = example_indexes(data.results)
    if not data.excerpt:
        return ""
    # Contiguous index runs become one collapsible block each.
    blocks: list[list[int]] = []
    for i in sorted(data.excerpt):
        if blocks and i == blocks[-1][-1] + 1:
            blocks[-1].append(i)
        else:
            blocks.append([i])
    out = ['<h2 id="history">History excerpts</h2>',
           "<p>Lines around every example; highlighted lines are the examples.</p>"]
    for block in blocks:
        lines = "".join(
            f'<div class="op{" example" if i in examples else ""}" id="op-{i}">'
            f'<span class="idx">{i}</span>{_e(data.excerpt[i])}</div>'
            for i in block
        )
        out.append(
            f'<details class="excerpt" id="excerpt-{block[0]}"><summary>history lines '
            f"{block[0]}–{block[-1]}</summary>{lines}</details>"
        )
    return "\n".join(out)


def _plan(data: RunData) -> str:
    text = data.plan_text or "(no plan.yaml in the run dir)"
    meta = ""
    if data.meta:
        meta = ('<h3>run.json</h3><pre class="plan">'
                + _e(json.dumps(data.meta, indent=1, sort_keys=True)) + "</pre>")
    seed = "none" if data.seed is None else _e(data.seed)
    return (f'<h2 id="plan">Plan as run</h2><p>seed: <code>{seed}</code></p>'
            f'<details open><summary>plan.yaml</summary><pre class="plan">{_e(text)}</pre>'
            f"</details>{meta}")


def _warnings(data: RunData) -> str:
    if not data.warnings:
        return ""
    items = "".join(f"<li>{_e(w)}</li>" for w in data.warnings)
    return f'<h2 id="warnings">Warnings</h2><ul class="warn">{items}</ul>'
