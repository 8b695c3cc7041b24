"""junit.xml of a night: one <testcase> per planned run, in the JUnit XML CI systems read.

Contract: `junit_xml(summary)` returns the document (bytes, UTF-8, with declaration):
<testsuites><testsuite name="highwater.nightly" ...> with tests/failures/errors/skipped/time
counts; each testcase is classname "highwater.nightly.<label>", name "<label> seed=<seed>";
an `unexpected` or `error` run has a <failure type=verdict> whose message names the anomaly
counts (a scenario / min-isr run: its own verdict's reason) and the run dir, and whose text
holds the anomaly table, the reason, the run's log and
the replay command; a skipped run has <skipped message=reason>.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from harness.nightly.night import ERROR, SKIP, UNEXPECTED


def anomaly_table(anomalies: Mapping[str, int] | None) -> str:
    if not anomalies:
        return "anomalies: none recorded (no results.json)"
    width = max(len(a) for a in anomalies)
    return "\n".join([f"{'anomaly'.ljust(width)}  count"]
                     + [f"{a.ljust(width)}  {n}" for a, n in anomalies.items()])


def _failure_message(run: Mapping[str, Any]) -> str:
    found = {a: n for a, n in (run.get("anomalies") or {}).items() if n}
    counts = ", ".join(f"{a}={n}" for a, n in found.items()) or "no anomalies counted"
    if run.get("kind") in ("scenario", "min-isr", "rdkafka-suite") and run.get("reason"):
        head = f"{run['kind']} verdict {run['verdict']}: {run['reason']}"
    elif run["verdict"] == ERROR:
        head = f"run error (exit {run.get('exit_code')}): {run.get('reason') or 'no results'}"
    else:
        head = f"verdict unexpected: {counts}"
    return f"{head}; run dir {run.get('run_dir') or '(none)'}"


def junit_xml(summary: Mapping[str, Any]) -> bytes:
    runs = summary["runs"]
    failures = sum(r["verdict"] in (UNEXPECTED, ERROR) for r in runs)
    skipped = sum(r["verdict"] == SKIP for r in runs)
    total = sum(r.get("elapsed_s") or 0.0 for r in runs)
    attrs = {"name": "highwater.nightly", "tests": str(len(runs)), "failures": str(failures),
             "errors": "0", "skipped": str(skipped), "time": f"{total:.3f}"}
    root = ET.Element("testsuites", attrs)
    suite = ET.SubElement(root, "testsuite", {**attrs, "timestamp": summary.get("started", ""),
                                              "hostname": summary.get("hostname", "")})
    props = ET.SubElement(suite, "properties")
    for key in ("date", "suite", "budget_s", "store"):
        if summary.get(key) is not None:
            ET.SubElement(props, "property", {"name": key, "value": str(summary[key])})
    for r in runs:
        case = ET.SubElement(suite, "testcase", {
            "classname": f"highwater.nightly.{r['label']}",
            "name": f"{r['label']} seed={r['seed']}",
            "time": f"{r.get('elapsed_s') or 0.0:.3f}",
        })
        if r["verdict"] == SKIP:
            ET.SubElement(case, "skipped", {"message": r.get("reason") or "skipped"})
        elif r["verdict"] in (UNEXPECTED, ERROR):
            fail = ET.SubElement(case, "failure", {"message": _failure_message(r),
                                                   "type": r["verdict"]})
            parts = [anomaly_table(r.get("anomalies")),
                     f"run dir: {r.get('run_dir') or '(none)'}"]
            if r.get("reason"):
                parts.append(f"reason: {r['reason']}")
            if r.get("log"):
                parts.append(f"console log: {r['log']}")
            if r.get("replay"):
                parts.append(f"replay: {r['replay']}")
            fail.text = "\n".join(parts)
        if r.get("run_dir"):
            ET.SubElement(case, "system-out").text = f"run dir: {r['run_dir']}"
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
