"""report.html from the fixture run: table, plots, fault shading, example links, escaping, CLI."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.checker.history import ANOMALIES
from harness.cli import main as cli_main
from harness.report import write_report
from harness.report.data import leader_changes, load_run, thin, throughput
from harness.report.svg import Chart, log_ticks, nice_ticks
from harness.store.states import StatesWriter, read_states

SVG_NS = "{http://www.w3.org/2000/svg}"


def _svgs(html: str) -> list[ET.Element]:
    """Every inline <svg>, parsed as XML: a malformed plot fails here."""
    return [ET.fromstring(m) for m in re.findall(r"<svg .*?</svg>", html, flags=re.S)]


def _by_class(svgs: list[ET.Element], cls: str) -> list[ET.Element]:
    return [s for s in svgs if cls in s.get("class", "").split()]


def test_report_has_verdict_table_plots_shading_and_links(fixture_run) -> None:
    run_dir, facts = fixture_run
    html = write_report(run_dir).read_text()

    assert 'id="verdict"' in html and "as-expected" in html and "INVALID" in html
    row = re.search(r'<tr class="found" id="anomaly-lost-write">(.*?)</tr>', html, re.S)
    assert row, "lost-write row missing or not highlighted"
    assert f'<td class="num">{len(facts["lost"])}</td>' in row.group(1)
    assert "t-0: 3, t-1: 2" in row.group(1)
    # Every example index links to a history line that exists on the page.
    for invoke, completion in facts["lost"]:
        for i in (invoke, completion):
            assert f'<a href="#op-{i}">{i}</a>' in row.group(1)
            assert f'id="op-{i}"' in html
    assert re.search(rf'<div class="op example" id="op-{facts["lost"][0][0]}">', html)
    assert '<tr class="info-found" id="anomaly-unseen-info">' in html
    assert html.count('<tr class="" id="anomaly-') == len(ANOMALIES) - 2  # zero-count ones

    svgs = _svgs(html)
    assert len(_by_class(svgs, "latency")) == 1
    assert len(_by_class(svgs, "throughput")) == 1
    assert len(_by_class(svgs, "replicas")) == 2  # t-0 and t-1
    latency = _by_class(svgs, "latency")[0]
    dots = {g.get("class"): len(g.findall(f"{SVG_NS}circle")) for g in latency.iter(f"{SVG_NS}g")
            if g.get("class", "").startswith("pt ")}
    assert dots == {"pt ok": 280, "pt fail": 10, "pt info": 10}
    for svg in svgs:  # both fault windows shaded and labelled in every timeline
        faults = [r for r in svg.iter(f"{SVG_NS}rect") if r.get("class") == "fault"]
        assert len(faults) == 2
        labels = [t.text for t in svg.iter(f"{SVG_NS}text") if t.get("class") == "fault-label"]
        assert labels == ["kill node=1", "partition nodes=[2, 3] (not stopped)"]
    kill = next(r for r in svgs[0].iter(f"{SVG_NS}rect") if r.get("class") == "fault")
    assert float(kill.get("width")) > 0
    for svg in _by_class(svgs, "replicas"):
        markers = [g for g in svg.iter(f"{SVG_NS}g") if g.get("class") == "leader-change"]
        texts = ["".join(g.itertext()) for g in markers]
        assert texts == ["leader b1 (epoch 0)", "leader b2 (epoch 1)"]
        assert len(svg.findall(f".//{SVG_NS}polyline")) >= 6  # HW + LEO for 3 brokers

    assert '<code id="seed">424242</code>' in html
    assert "fixture &lt;run&gt; &amp; co" in html and "<run>" not in html
    assert "lost-write: &#x27;&gt; 0&#x27;" in html or "lost-write: '&gt; 0'" in html


def test_report_is_self_contained(fixture_run) -> None:
    html = write_report(fixture_run[0]).read_text()
    without_ns = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", without_ns, re.I)
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", html, re.I)


def test_broker_gap_splits_the_replica_line(fixture_run) -> None:
    data = load_run(fixture_run[0])
    b1 = [s.time for s in data.states["t-0"] if s.node == 1]
    assert max(b - a for a, b in zip(b1, b1[1:], strict=False)) == 6 * 10**9  # killed 10-15 s
    html = write_report(fixture_run[0]).read_text()
    svg = _by_class(_svgs(html), "replicas")[0]
    b1_colour = "#1f77b4"
    b1_lines = [p for p in svg.iter(f"{SVG_NS}polyline") if p.get("stroke") == b1_colour]
    assert len(b1_lines) == 4  # HW and LEO, each split in two by the gap


def test_malformed_inputs_are_warnings_not_errors(fixture_run) -> None:
    run_dir, _ = fixture_run
    with open(run_dir / "history.jsonl", "a") as fh:
        fh.write("{not json\n")
    with open(run_dir / "states.jsonl", "a") as fh:
        fh.write('{"time": 1, "node": 1, "topic": "t", "partition": 0, "role": "boss"}\n')
    (run_dir / "results.json").unlink()
    html = write_report(run_dir).read_text()
    assert "not checked" in html
    n_hist = sum(1 for _ in open(run_dir / "history.jsonl"))
    assert f"history.jsonl:{n_hist}: skipped" in html
    n_states = sum(1 for _ in open(run_dir / "states.jsonl"))
    assert f"states.jsonl:{n_states}: role: invalid value &#x27;boss&#x27;" in html


def test_empty_run_dir_still_renders(tmp_path: Path) -> None:
    html = write_report(tmp_path).read_text()
    assert "not checked" in html and "No sends in the history" in html
    assert "history.jsonl: missing" in html


def test_cli_regenerates_report(fixture_run, capsys) -> None:
    run_dir, _ = fixture_run
    assert cli_main(["report", str(run_dir)]) == 0
    assert Path(capsys.readouterr().out.strip()) == run_dir / "report.html"
    assert (run_dir / "report.html").stat().st_size > 10_000
    out = run_dir / "other.html"
    assert cli_main(["report", str(run_dir), "--output", str(out)]) == 0 and out.is_file()
    assert cli_main(["report", str(run_dir / "nope")]) == 2
    assert "nope: not a run directory" in capsys.readouterr().err


# ------------------------------------------------------------------ parts


def test_states_round_trip_and_leader_changes(tmp_path: Path) -> None:
    path = tmp_path / "states.jsonl"
    with StatesWriter(path, start_ns=0, clock=lambda: 5) as w:
        w.write(1, "t", 0, "leader", 1, 0, 3, 4, [1, 2])
        w.write(2, "t", 0, "follower", 1, 0, 3, 3, [1, 2], time_ns=7)
        w.write(2, "t", 0, "leader", 2, 1, 3, 3, [2], time_ns=9)
        w.write(1, "t", 0, "leader", 1, 0, 3, 5, [1], time_ns=10)  # a stale ex-leader
    samples, problems = read_states(path)
    assert problems == []
    assert [(s.time, s.node, s.role) for s in samples] == [
        (5, 1, "leader"), (7, 2, "follower"), (9, 2, "leader"), (10, 1, "leader")]
    assert samples[0].isr == (1, 2)
    changes = leader_changes(samples)
    assert [(c.leader, c.epoch) for c in changes] == [(1, 0), (2, 1)]


def test_throughput_bins_and_thinning(fixture_run) -> None:
    data = load_run(fixture_run[0])
    width, series = throughput(data.sends, data.end_s)
    assert width == 1
    total = sum(v * width for s in series.values() for _, v in s)
    assert round(total) == len(data.sends)
    shown, n = thin(data.sends, limit=50)
    assert n == 300 and len(shown) <= 50
    assert sum(p.type != "ok" for p in shown) == 20  # every fail/info kept


def test_axis_ticks_and_clamping() -> None:
    assert nice_ticks(0, 30, 10) == [0, 5, 10, 15, 20, 25, 30]
    assert log_ticks(0.5, 2000) == [1, 10, 100, 1000]
    assert log_ticks(2, 60) == [2, 5, 10, 20, 50]
    c = Chart("t", (0, 10), (0, 100))
    assert c.sx(-5) == c.sx(0) and c.sx(50) == c.sx(10)
    assert c.sy(0) > c.sy(100)  # SVG y grows downwards


def test_results_examples_survive_json_round_trip(fixture_run) -> None:
    # The report reads examples exactly as the checker writes them: lists of ints.
    results = json.loads((fixture_run[0] / "results.json").read_text())
    data = load_run(fixture_run[0])
    wanted = {i for ex in results["anomalies"]["lost-write"]["examples"] for i in ex}
    assert wanted <= set(data.excerpt)


def _segment(path: Path, values: list[str]) -> None:
    from broker_app.storage import build_batch

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_batch([(None, v.encode()) for v in values], timestamp=1000))


def test_report_compares_the_collected_replica_logs(fixture_run) -> None:
    run_dir, _ = fixture_run
    seg = "t-0/00000000000000000000.log"
    _segment(run_dir / "data/broker-1/backing" / seg, ["1", "2", "3"])
    _segment(run_dir / "data/broker-2/backing" / seg, ["1", "9", "8", "7"])
    _segment(run_dir / "data/controller/data/__cluster_metadata-0/00000000000000000000.log",
             ["x"])
    html = write_report(run_dir).read_text()
    section = html[html.index('id="replicas"'):html.index('id="history"')]
    assert "diverge on disk at 2 offset(s), first at offset 1" in section
    assert "<td class=\"num\">1</td><td>2</td><td>9</td>" in section
    assert "__cluster_metadata" not in section
    _segment(run_dir / "data/broker-2/backing" / seg, ["1", "2"])
    html = write_report(run_dir).read_text()
    assert "replicas agree on every offset two of them hold (2 held by all)" in html


def test_fault_labels_name_the_step_and_do_not_overlap() -> None:
    from harness.report.data import FaultWindow

    step = FaultWindow("disk-sync", {"step": "writeback-y", "nodes": ["broker-2"]}, 1.0, 1.0, 7)
    assert (step.name, step.label) == (
        "writeback-y", "disk-sync step=writeback-y,nodes=['broker-2']")
    assert FaultWindow("kill", {"node": 1}, 0, 1, 0).name == "kill node=1"

    chart = Chart("c", (0, 100), (0, 1))
    chart.shade(10, 20, "first-label", title="kill step=first-label")
    chart.shade(10.5, 12, "second")  # starts under the first label: next line
    chart.shade(11, 12, "third")
    chart.shade(60, 70, "far")  # room again on the top line
    svg = ET.fromstring(chart.render())
    ys = {t.text: float(t.get("y")) for t in svg.iter(f"{SVG_NS}text")
          if t.get("class") == "fault-label"}
    assert ys["first-label"] > ys["second"] > ys["third"]
    assert ys["far"] == ys["first-label"]
    titles = [t.text for t in svg.iter(f"{SVG_NS}title")]
    assert "kill step=first-label: 10.00s - 20.00s" in titles


def test_event_loop_lag_is_drawn_only_past_the_threshold(fixture_run) -> None:
    from harness.report.page import LOOP_LAG_DRAW_MS

    run_dir, _facts = fixture_run
    html = write_report(run_dir).read_text()
    assert 'id="loop-lag"' not in html  # the fixture's states carry no lag at all
    states = run_dir / "states.jsonl"
    with StatesWriter(states, start_ns=0) as w:
        for tick, lag in enumerate((3, 40, LOOP_LAG_DRAW_MS - 1)):
            w.write(2, "t", 0, "leader", 2, 1, 100, 100, [2], time_ns=tick * 10**9,
                    loop_lag_ms=lag)
    lags = [s.loop_lag_ms for s in read_states(states)[0] if s.loop_lag_ms is not None]
    assert lags == [3, 40, LOOP_LAG_DRAW_MS - 1]  # round trip; lines without it stay None
    assert 'id="loop-lag"' not in write_report(run_dir).read_text()  # below: not drawn
    with StatesWriter(states, start_ns=0) as w:
        w.write(3, "t", 0, "follower", 2, 1, 90, 95, [2], time_ns=4 * 10**9, loop_lag_ms=12_000)
    html = write_report(run_dir).read_text()
    assert 'id="loop-lag"' in html and "max 12000 ms" in html
    [chart] = _by_class(_svgs(html), "loop-lag")
    assert "b3" in ET.tostring(chart, encoding="unicode")


def test_report_shows_the_emulated_version_and_elr_elections(tmp_path: Path) -> None:
    """KIP-966 in the report: the leader's ISR/ELR as it changed, and the Kafka version."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({
        "kafka_version": "4.1", "version_switches": {"eligible-leader-replicas": "true"}}))
    with StatesWriter(run_dir / "states.jsonl", start_ns=0, clock=lambda: 0) as w:
        w.write(1, "t", 0, "leader", 1, 0, 9, 9, [1, 2], time_ns=10**9)
        w.write(1, "t", 0, "leader", 1, 0, 9, 12, [1], time_ns=2 * 10**9, elr=[2])
        w.write(1, "t", 0, "leader", 1, 0, 9, 13, [1], time_ns=3 * 10**9, elr=[2])  # same
        w.write(2, "t", 0, "leader", 2, 1, 9, 9, [2], time_ns=4 * 10**9)
    samples, problems = read_states(run_dir / "states.jsonl")
    assert problems == [] and samples[1].elr == (2,) and samples[0].elr == ()
    html = write_report(run_dir).read_text()
    assert 'id="kafka-version">4.1</code>' in html
    table = html.split('id="elections-t-0"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td[^>]*>([\d.]+)</td><td>(b\d)</td><td[^>]*>(\d+)</td>"
                      r"<td>([^<]*)</td><td>([^<]*)</td></tr>", table)
    assert rows == [("1.0", "b1", "0", "[1, 2]", "[]"), ("2.0", "b1", "0", "[1]", "[2]"),
                    ("4.0", "b2", "1", "[2]", "[]")]


def test_sends_summary_stays_bounded_and_exact() -> None:
    from harness.report.data import OpPoint, Sends

    sends = Sends(cap=100)
    for i in range(100_000):
        typ = "fail" if i % 1000 == 0 else "ok"
        sends.append(OpPoint(i / 1000, 1.0, typ, 2 * i, 2 * i + 1, i / 1000 + 0.0005))
    kept = sends.points()
    assert len(sends) == 100_000 and sends.by_type == {"ok": 99_900, "fail": 100, "info": 0}
    assert len(kept) < 300 and sum(p.type == "fail" for p in kept) == 100
    gaps = {b.invoke_index - a.invoke_index for a, b in zip(sends.oks, sends.oks[1:], strict=False)}
    assert max(gaps) <= min(gaps) + 2  # evenly spread (indexes step by 2; +2 around a fail)
    width, series = throughput(sends, 100.0)
    assert width == 2 and sum(v * width for s in series.values() for _, v in s) == 100_000
    shown, total = thin(sends, limit=50)
    assert total == 100_000 and len(shown) <= 50


def test_report_shows_the_metadata_divergence_of_results(fixture_run) -> None:
    from harness.store.results import read_results, write_results

    run_dir, _facts = fixture_run
    results = read_results(run_dir)
    assert results is not None
    results["metadata-divergence"] = {
        "count": 1, "by_partition": {"t-0": 1}, "examples": [["controller-3001", 41, "ab12"]],
        "reference": {"node": "controller-3000", "digest": "cd34"}, "unknown": ["broker-3"]}
    write_results(run_dir, results)
    html = write_report(run_dir).read_text()
    row = re.search(r'<tr class="found" id="anomaly-metadata-divergence">(.*?)</tr>', html, re.S)
    assert row, "metadata-divergence row missing or not highlighted"
    assert '<td class="num">1</td>' in row.group(1) and "t-0: 1" in row.group(1)
    assert "controller-3001 at 41" in row.group(1) and "not compared: broker-3" in row.group(1)
    # The verdict shown is the run's (the history's and the metadata check), saying what missed.
    verdict = re.search(r'<div class="verdict (\w+)" id="verdict"><b>([\w-]+)</b>(.*?)</div>', html)
    assert verdict and verdict.group(1, 2) == ("bad", "unexpected"), html[:2000]
    assert "metadata-divergence == 0 (got 1)" in verdict.group(3)


def test_report_shows_the_controller_epoch_timeline(tmp_path: Path) -> None:
    """Issue 13: the active KRaft controller and its Raft epoch beside the leader epochs,
    from quorum.jsonl (the run's poller writes it); a bad line is a warning, not a crash."""
    from harness.plan.model import ClusterSpec
    from harness.state_poller import StatePoller, build_state
    from harness.store.quorum import QuorumWriter, active_changes, read_quorum

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with StatesWriter(run_dir / "states.jsonl", start_ns=0, clock=lambda: 0) as w:
        w.write(1, "t", 0, "leader", 1, 0, 9, 9, [1, 2], time_ns=10**9)
    q = QuorumWriter(run_dir / "quorum.jsonl", start_ns=0, clock=lambda: 0)
    q.write(1, 1, 1, True, 5, 5, time_ns=10**9)
    q.write(2, 1, 1, False, 5, 5, time_ns=10**9)
    q.write(1, 1, 1, True, 6, 6, time_ns=2 * 10**9)  # same leader, same epoch: no new row
    q.write(1, 1, 1, True, 6, 6, time_ns=4 * 10**9)  # the deposed leader, not yet resigned
    q.write(3, 2, 3, True, 7, 7, time_ns=3 * 10**9)
    q.close()
    with open(run_dir / "quorum.jsonl", "a") as fh:
        fh.write('{"time": 1, "controller": "x"}\n')
    samples, problems = read_quorum(run_dir / "quorum.jsonl")
    assert len(samples) == 5 and len(problems) == 1 and "controller" in problems[0]
    assert active_changes(samples) == [(1.0, 1, 1), (3.0, 3, 2)]
    html = write_report(run_dir).read_text()
    table = html.split('id="elections-controller"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td[^>]*>([\d.]+)</td><td>(controller-\d)</td><td[^>]*>(\d+)</td>",
                      table)
    assert rows == [("1.0", "controller-1", "1"), ("3.0", "controller-3", "2")]
    assert html.index('id="elections-controller"') < html.index('id="elections-t-0"')

    # The poller writes what it polled: one line per answering controller.
    answer = {"quorum": {"epoch": 4, "leader_id": 3002, "active": True, "high_watermark": 9,
                         "committed_offset": 9, "log_end_offset": 10}}
    qw = QuorumWriter(tmp_path / "q.jsonl")
    poller = StatePoller(lambda: {"controller-2": "127.0.0.1:1"}, ClusterSpec(), quorum=qw)
    # what poll_once does with the state it built from the answers
    poller._write_quorum(build_state(ClusterSpec(), {"controller-2": answer}))
    qw.close()
    [s] = read_quorum(tmp_path / "q.jsonl")[0]
    assert (s.controller, s.epoch, s.leader, s.active, s.hw) == (2, 4, 2, True, 9)
