"""`highwater bench rdkafka-suite`: librdkafka's own integration tests against highwater.

librdkafka's `tests/` folder is the suite its authors run against real Kafka clusters; here
it is an oracle for what a broker must do for the most used client library (issue 29).

- Source: Debian's source package of librdkafka (`apt-get source --download-only` with a
  private apt configuration holding one deb-src line, so the machine's own apt setup is not
  touched; nothing but Debian's archive is reached), or a source tree given with `--source`.
  Downloaded and built once into `--work` (default ~/.cache/highwater/rdkafka-suite).
- Build: `./configure` without SSL, SASL, GSSAPI, curl; `make libs`; `make -C tests
  test-runner` (the tests need gcc, g++ and make).
- Cluster: one controller and three brokers as local processes (racks RACK1-3), for each of
  the suite's scenarios the chosen tests need: `default` (auto-create on, 4 partitions, RF 3,
  as its scenarios/default.json) and `noautocreate`.
- Tests: every test of `tests/test.c`'s table that needs a broker (TEST_F_LOCAL ones test the
  client alone, manual ones need a person), one `test-runner` process per test number with
  TESTS set, `-p1`, TEST_KAFKA_VERSION, the timeout multiplier librdkafka's CI uses (3) and a
  bound (`--timeout`). SSL and SASL tests skip themselves without those settings; a test that
  fails because it needs ACLs or Kafka's own tools (no KAFKA_PATH) is recorded as SKIP with
  that reason; SKIP lists the tests not started (written for brokers before Kafka 4.0).
- Output: `rdkafka-suite.tsv` in a run directory under `--out` (test number, name, PASS /
  FAIL / SKIP, seconds, first error line) and `rdkafka-suite.md` (the same as a table for
  docs/compat-librdkafka.md); the .tsv's path is printed last.

Exit code 0 when no test failed outside KNOWN_GAPS (tests of features not built yet, each
with its reason) and CLIENT_BUGS (bugs of that librdkafka release that its later releases
fixed, from its CHANGELOG), 1 when one did (listed on an `unexpected failures:` line), 2 when
the suite could not be set up.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.localproc import LocalCluster

DEFAULT_WORK = Path.home() / ".cache" / "highwater" / "rdkafka-suite"
DEBIAN_SOURCES = ("deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                  "http://deb.debian.org/debian bookworm main\n")  # fmt: skip
CONFIGURE = ["./configure", "--disable-ssl", "--disable-gssapi", "--disable-sasl",
             "--disable-curl"]  # fmt: skip
SCENARIO_ARGS = {
    "default": [],
    "noautocreate": ["--no-auto-create-topics"],
}
# Tests the runner does not start, with why: what they check is not what a Kafka 4.1 broker
# does (run against Kafka 4.1 itself, they fail the same way).
SKIP: dict[str, str] = {
    "0092": "sets message.format.version, which Kafka 4.0 removed (KIP-724, KAFKA-17393): "
            "Kafka 4.1 refuses it with INVALID_CONFIG too",
}
# Tests that fail because they need what the broker does not have yet: their FAIL stays in the
# table, with this reason, and does not make the run unexpected.
TRANSACTIONS = "needs transactions (not built yet)"
KNOWN_GAPS: dict[str, str] = {
    "0055": TRANSACTIONS,  # its transactional producer sub-test
    "0061": TRANSACTIONS,  # consumer lag with a transactional producer (read_committed)
    "0102": "needs static group membership (not built yet)",
    "0103": TRANSACTIONS,
    "0129": TRANSACTIONS,
}
# Failures that are bugs of the client at that librdkafka version, fixed in a later release
# (its CHANGELOG): (test, version) -> which. The broker under test is not at fault.
CLIENT_BUGS: dict[tuple[str, str], str] = {
    ("0107", "2.0.2"): "librdkafka 2.0.2 bug: a consumer of a deleted topic's partition hangs "
                       "in destroy (fetch queue reference cycle, fixed in 2.6.1, #4724)",
    ("0113", "2.0.2"): "librdkafka 2.0.2 bug: h_delete_topic's consumer hangs in close after "
                       "the topic is deleted (lost-partition refcount, #4724 / 2.6.1)",
    ("0137", "2.0.2"): "librdkafka 2.0.2 bug: rd_kafka_seek_partitions' timeout unit "
                       "(ms taken as µs, fixed in 2.1.0): the seek times out at random",
}
TIMEOUT_MULTIPLIER = 3.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ROW = re.compile(r"^\|\s*(\d{4}\w*)\s*\|\s*(\w+)\s*\|\s*([\d.]+)s\s*\|\s?(.*)$")


@dataclass
class SuiteTest:
    """One entry of test.c's table."""

    number: str
    name: str
    flags: str
    scenario: str

    @property
    def needs_broker(self) -> bool:
        return "TEST_F_LOCAL" not in self.flags and "TEST_F_MANUAL" not in self.flags


@dataclass
class Outcome:
    number: str
    name: str
    verdict: str  # PASS, FAIL, SKIP
    seconds: float
    first_error: str


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", type=Path, default=None,
                        help="a librdkafka source tree to use instead of Debian's package")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK,
                        help="where the source is downloaded and built (kept between runs)")
    parser.add_argument("--out", type=Path, default=Path("runs"),
                        help="the run directory is made under this folder")
    parser.add_argument("--tests", default=None,
                        help="comma-separated test numbers (default: every broker test)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds each test may take before it is killed and FAILs")
    parser.add_argument("--kafka-version", default="4.1.0",
                        help="TEST_KAFKA_VERSION given to the tests")  # fmt: skip


def client_version(src: Path) -> str:
    """librdkafka's version of a source tree, from RD_KAFKA_VERSION in src/rdkafka.h."""
    header = src / "src" / "rdkafka.h"
    m = re.search(r"#define RD_KAFKA_VERSION\s+0x([0-9a-fA-F]{8})",
                  header.read_text(errors="replace") if header.exists() else "")
    if m is None:
        return "unknown"
    n = int(m.group(1), 16)
    return f"{n >> 24}.{(n >> 16) & 0xFF}.{(n >> 8) & 0xFF}"


def debian_source(work: Path) -> Path:
    """Debian's librdkafka source, unpacked under `work` (downloaded the first time)."""
    for tree in sorted(work.glob("librdkafka-*/tests/test.c")):
        return tree.parents[1]
    apt = work / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(DEBIAN_SOURCES)
    opts = ["-o", f"Dir::Etc::SourceList={apt / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/dev/null", "-o", f"Dir::State::Lists={apt / 'lists'}",
            "-o", f"Dir::Cache={apt / 'cache'}", "-o", "APT::Sandbox::User=root"]  # fmt: skip
    _run(["apt-get", *opts, "update", "-q"], work, 600)
    _run(["apt-get", *opts, "source", "--download-only", "-q", "librdkafka"], work, 600)
    tarballs = sorted(work.glob("librdkafka_*.orig.tar.gz"))
    if not tarballs:
        raise RuntimeError(f"apt-get source left no librdkafka_*.orig.tar.gz in {work}")
    _run(["tar", "xzf", tarballs[-1].name], work, 300)
    for tree in sorted(work.glob("librdkafka-*/tests/test.c")):
        return tree.parents[1]
    raise RuntimeError(f"{tarballs[-1]} holds no librdkafka-*/tests/test.c")


RAPIDJSON = Path("/usr/include/rapidjson/schema.h")  # Debian's rapidjson-dev


def build(src: Path) -> Path:
    """The tests' test-runner, built (once) in `src`; again when rapidjson-dev appeared since
    (without it the tests that check statistics JSON, 0053 and 0101 among them, skip)."""
    runner = src / "tests" / "test-runner"
    config = src / "Makefile.config"
    with_json = config.exists() and re.search(r"^WITH_RAPIDJSON=\s*y", config.read_text(
        errors="replace"), re.M) is not None  # fmt: skip
    if runner.exists() and (with_json or not RAPIDJSON.exists()):
        return runner
    if runner.exists():
        _run(["make", "clean"], src, 600)
        _run(["make", "-C", "tests", "clean"], src, 600)
    if not RAPIDJSON.exists():
        print(f"rdkafka-suite: {RAPIDJSON} missing (Debian's rapidjson-dev): tests that "
              "check statistics JSON will skip themselves", file=sys.stderr)
    for tool in ("gcc", "g++", "make"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"building librdkafka's tests needs {tool}, not found on PATH")
    jobs = str(os.cpu_count() or 1)
    _run(CONFIGURE, src, 600)
    _run(["make", "-j", jobs, "libs"], src, 3600)
    _run(["make", "-C", "tests", "-j", jobs, "test-runner"], src, 3600)
    if not runner.exists():
        raise RuntimeError(f"make did not produce {runner}")
    return runner


def _run(cmd: list[str], cwd: Path, timeout: float) -> None:
    log = cwd / "highwater-setup.log"
    with open(log, "ab") as f:
        f.write(f"$ {' '.join(cmd)}\n".encode())
        f.flush()
        rc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                            timeout=timeout, check=False).returncode  # fmt: skip
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} … failed with exit code {rc}; see {log}")


def suite_tests(test_c: Path) -> list[SuiteTest]:
    """The `tests[]` table of test.c: number, name, flags, scenario (default "default")."""
    text = test_c.read_text(errors="replace")
    table = text[text.index("struct test tests[] = {"):]
    table = table[: table.index("{NULL}")]  # the table's terminator
    out = []
    # One entry per _TEST( ... ), up to the matching parenthesis.
    for start in [m.start() for m in re.finditer(r"_TEST\(", table)]:
        depth, i = 0, start + len("_TEST")
        while i < len(table):
            depth += {"(": 1, ")": -1}.get(table[i], 0)
            if depth == 0:
                break
            i += 1
        entry = table[start:i + 1]
        m = re.match(r"_TEST\(\s*(\d{4})_(\w+)\s*,\s*([^,)]*)", entry)
        if m is None:
            continue
        scenario = re.search(r'\.scenario\s*=\s*"([^"]*)"', entry)
        out.append(SuiteTest(m.group(1), m.group(2), m.group(3).strip(),
                             scenario.group(1) if scenario else "default"))  # fmt: skip
    return out


def parse_summary(output: str) -> list[tuple[str, str, float, str]]:
    """(name, state, seconds, reason) of each row of test-runner's summary table."""
    rows = []
    for line in _ANSI.sub("", output).splitlines():
        m = _ROW.match(line.strip())
        if m and m.group(1)[:4].isdigit():
            rows.append((m.group(1), m.group(2), float(m.group(3)), m.group(4).strip()))
    return rows


_FAILED_AT = re.compile(r'^### Test "(\d{4}\w*)[^"]*" failed at ([^ ]+) at .*###$')
# A failure whose reason says the test needs what this run leaves out by design (the issue's
# scope: no SSL, SASL, ACLs or Kafka's own tools): a SKIP with that reason, not a FAIL.
_NEEDS = {"KAFKA_PATH": "needs Kafka's own tools", "ACLs Admin API": "needs ACLs"}


def failures(output: str) -> dict[str, str]:
    """Test name -> "reason (where)" for each `### Test "NAME ..." failed at WHERE` block."""
    lines = _ANSI.sub("", output).splitlines()
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = _FAILED_AT.match(line.strip())
        if m and m.group(1) not in out:
            reason = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out[m.group(1)] = f"{reason} ({m.group(2)})"[:300]
    return out


def run_one(runner: Path, entries: list[SuiteTest], bootstrap: str, scenario: str,
            timeout: float, version: str, logs: Path) -> list[Outcome]:  # fmt: skip
    """Run one test number's `entries` (the table's entries of that number in `scenario`) in
    one test-runner and return an outcome for each."""
    number = entries[0].number
    conf = logs / "test.conf"
    # librdkafka's own CI runs its tests with a timeout multiplier of 3 (test.c adds 2 when
    # CI is set); this machine is no faster than a CI runner, so the same, said openly.
    conf.write_text(f"bootstrap.servers={bootstrap}\ntest.timeout.multiplier={TIMEOUT_MULTIPLIER}\n")
    env = {**os.environ, "TESTS": number, "TEST_KAFKA_VERSION": version,
           "RDKAFKA_TEST_CONF": str(conf), "TEST_SCENARIO": scenario}  # fmt: skip
    env.pop("KAFKA_PATH", None)
    env.pop("CI", None)  # the suite's CI mode runs tests in parallel
    tests_dir = runner.parent
    env["LD_LIBRARY_PATH"] = f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}"
    started = time.monotonic()
    try:
        proc = subprocess.run([str(runner), "-p1", "-L"], cwd=tests_dir, env=env,
                              timeout=timeout, capture_output=True, check=False)  # fmt: skip
        output = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
        ended = ""
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode(errors="replace") + \
            (exc.stderr or b"").decode(errors="replace")
        ended = f"killed after {timeout:.0f}s"
    took = round(time.monotonic() - started, 1)
    (logs / f"{number}-{scenario}.log").write_text(output)
    rows = {name: (state, secs, reason) for name, state, secs, reason in parse_summary(output)}
    failed = failures(output)
    out = []
    for t in entries:
        full = f"{t.number}_{t.name}"
        state, secs, reason = rows.get(full, ("", took, ""))
        verdict = {"PASSED": "PASS", "FAILED": "FAIL", "SKIPPED": "SKIP"}.get(state, "FAIL")
        error = failed.get(full, reason if verdict != "PASS" else "")
        if verdict == "FAIL" and not error:
            error = ended or (f"state {state}" if state else "the runner ended before its "
                              "summary table")  # fmt: skip
        need = next((why for k, why in _NEEDS.items() if k in error), None)
        if need is None and "KAFKA_PATH must be set" in output:  # e.g. a Java helper it runs
            need = "needs Kafka's own tools (it warned: KAFKA_PATH must be set)"
        if verdict == "FAIL" and need:
            verdict, error = "SKIP", f"{need}: {error}"
        out.append(Outcome(t.number, t.name, verdict, secs, error))
    return out


def what_it_checks(tests_dir: Path, number: str) -> str:
    """The first line of the test file's own description (its first /** comment)."""
    for f in sorted(tests_dir.glob(f"{number}-*.c*")):
        text = f.read_text(errors="replace")
        for block in re.findall(r"/\*\*(.*?)\*/", text, re.S):
            lines = [ln.strip().lstrip("*").strip() for ln in block.splitlines()]
            lines = [ln.removeprefix("@brief").strip() for ln in lines if ln.strip()]
            if lines and "Copyright" not in block:
                return lines[0][:140]
    return ""


def write_tables(outcomes: list[Outcome], run_dir: Path, wall_s: float,
                 tests_dir: Path | None = None) -> Path:  # fmt: skip
    tsv = run_dir / "rdkafka-suite.tsv"
    with open(tsv, "w") as f:
        f.write("test\tname\tverdict\tseconds\tfirst_error\n")
        for o in outcomes:
            err = o.first_error.replace("\t", " ").replace("\n", " ")
            f.write(f"{o.number}\t{o.name}\t{o.verdict}\t{o.seconds:.1f}\t{err}\n")
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("PASS", "FAIL", "SKIP")}
    md = [f"{len(outcomes)} tests: {counts['PASS']} PASS, {counts['FAIL']} FAIL, "
          f"{counts['SKIP']} SKIP in {wall_s / 60:.1f} min.", "",
          "| test | name | what it checks | verdict | s | first error |",
          "|---|---|---|---|---|---|"]  # fmt: skip
    for o in outcomes:
        checks = what_it_checks(tests_dir, o.number) if tests_dir else ""
        md.append(f"| {o.number} | {o.name} | {checks.replace('|', '/')} | {o.verdict} | "
                  f"{o.seconds:.1f} | {o.first_error.replace('|', '/')[:160]} |")  # fmt: skip
    (run_dir / "rdkafka-suite.md").write_text("\n".join(md) + "\n")
    return tsv


def run(args: argparse.Namespace) -> int:
    args.work.mkdir(parents=True, exist_ok=True)
    try:
        src = args.source.resolve() if args.source else debian_source(args.work)
        print(f"librdkafka {client_version(src)} source: {src}", flush=True)
        runner = build(src)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        print(f"rdkafka-suite: cannot set up librdkafka's tests: {e}", file=sys.stderr)
        return 2
    tests = [t for t in suite_tests(src / "tests" / "test.c") if t.needs_broker]
    if args.tests:
        wanted = {n.strip() for n in args.tests.split(",")}
        tests = [t for t in tests if t.number in wanted]
    run_dir = args.out / time.strftime("%Y%m%d-%H%M%S-rdkafka-suite")
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for scenario in sorted({s for t in tests for s in t.scenario.split(",")}
                           & set(SCENARIO_ARGS)):  # fmt: skip
        numbers = sorted({t.number for t in tests if scenario in t.scenario.split(",")})
        if not numbers:
            continue
        broker_args = ["--log-level", "WARNING", "--num-partitions", "4",
                       "--default-replication-factor", "3", *SCENARIO_ARGS[scenario]]
        controller_args = ["--log-level", "WARNING", "--num-partitions", "4",
                           "--default-replication-factor", "3"]
        print(f"scenario {scenario}: {len(numbers)} tests", flush=True)
        with LocalCluster(run_dir / f"cluster-{scenario}", 3, broker_args=broker_args,
                          controller_args=controller_args,
                          racks=["RACK1", "RACK2", "RACK3"]) as cluster:  # fmt: skip
            for number in numbers:
                entries = [t for t in tests if t.number == number
                           and scenario in t.scenario.split(",")]  # fmt: skip
                if number in SKIP:
                    outcomes += [Outcome(number, t.name, "SKIP", 0.0, SKIP[number])
                                 for t in entries]  # fmt: skip
                    continue
                for o in run_one(runner, entries, cluster.bootstrap, scenario, args.timeout,
                                 args.kafka_version, logs):  # fmt: skip
                    outcomes.append(o)
                    print(f"  {o.number} {o.name:<40} {o.verdict} {o.seconds:7.1f}s "
                          f"{o.first_error[:100]}", flush=True)  # fmt: skip
    outcomes.sort(key=lambda o: (o.number, o.name))
    version = client_version(src)
    known = {**KNOWN_GAPS, **{n: why for (n, v), why in CLIENT_BUGS.items() if v == version}}
    for o in outcomes:
        if o.verdict == "FAIL" and o.number in known:
            o.first_error = f"known: {known[o.number]}; {o.first_error}"
    tsv = write_tables(outcomes, run_dir, time.monotonic() - started, runner.parent)
    print((run_dir / "rdkafka-suite.md").read_text().splitlines()[0])
    unexpected = [f"{o.number}_{o.name}" for o in outcomes
                  if o.verdict == "FAIL" and o.number not in known]  # fmt: skip
    if unexpected:
        print(f"unexpected failures: {', '.join(unexpected)}")
    print(tsv)
    return 1 if unexpected else 0
