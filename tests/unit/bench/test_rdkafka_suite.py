"""`highwater bench rdkafka-suite`'s reading of librdkafka's test table and test-runner output
(text in the formats librdkafka 2.0.2 prints), and its nightly entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.rdkafka_suite import failures, parse_summary, suite_tests
from harness.nightly.launcher import Launcher, rdkafka_suite_record
from harness.nightly.schedule import RAN, PlannedRun, RunRecord
from harness.nightly.suite import RdkafkaSuiteEntry, parse_suite
from harness.plan.errors import PlanError

TABLE = """
int main_0001_multiobj(int argc, char **argv);
struct test tests[] = {
    /* Special MAIN test to hold over-all timings, etc. */
    {.name = "<MAIN>", .flags = TEST_F_LOCAL},
    _TEST(0000_unittests,
          TEST_F_LOCAL,
          _THRES(.ucpu = 100.0, .scpu = 20.0, .rss = 900.0)),
    _TEST(0001_multiobj, 0),
    _TEST(0045_subscribe_update, 0, TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
    _TEST(0045_subscribe_update_mock, TEST_F_LOCAL),
    _TEST(0090_idempotence, 0, TEST_BRKVER(0, 11, 0, 0)),
    _TEST(8000_idle, TEST_F_MANUAL),
    {NULL}};
"""

ESC = "\x1b"
OUTPUT = f"""TEST 20261127111625 (bare, scenario default) SUMMARY
#==================================================================#
|{ESC}[32m <MAIN>                                   |     PASSED |  16.010s {ESC}[0m|
|{ESC}[32m 0045_subscribe_update                    |     PASSED |  15.460s {ESC}[0m|
|{ESC}[31m 0090_idempotence                         |     FAILED |   3.250s {ESC}[0m|{ESC}[31m \
Expected 10 messages\
{ESC}[0m
|{ESC}[36m 0045_subscribe_update_mock               |    SKIPPED |   0.000s {ESC}[0m|{ESC}[36m \
Filtered due to negative test flags{ESC}[0m
#==================================================================#
{ESC}[0m{ESC}[31m### Test "0045_subscribe_update_topic_remove (do_test_topic_remove:298: \
Topic removal testing)" failed at test.c:4573:test_kafka_topics() at Fri Nov 27 11:13:30 2026: ###
test_kafka_topics: KAFKA_PATH and BROKERS must be set
"""


def test_suite_table_entries(tmp_path: Path) -> None:
    test_c = tmp_path / "test.c"
    test_c.write_text(TABLE)
    tests = suite_tests(test_c)
    assert [(t.number, t.name, t.scenario) for t in tests] == [
        ("0000", "unittests", "default"), ("0001", "multiobj", "default"),
        ("0045", "subscribe_update", "default"),
        ("0045", "subscribe_update_topic_remove", "noautocreate"),
        ("0045", "subscribe_update_mock", "default"), ("0090", "idempotence", "default"),
        ("8000", "idle", "default")]  # fmt: skip
    assert [t.name for t in tests if t.needs_broker] == [
        "multiobj", "subscribe_update", "subscribe_update_topic_remove", "idempotence"]


def test_summary_rows_and_failure_blocks() -> None:
    assert parse_summary(OUTPUT) == [
        ("0045_subscribe_update", "PASSED", 15.46, ""),
        ("0090_idempotence", "FAILED", 3.25, "Expected 10 messages"),
        ("0045_subscribe_update_mock", "SKIPPED", 0.0, "Filtered due to negative test flags"),
    ]
    assert failures(OUTPUT) == {
        "0045_subscribe_update_topic_remove":
            "test_kafka_topics: KAFKA_PATH and BROKERS must be set "
            "(test.c:4573:test_kafka_topics())"}  # fmt: skip


def test_nightly_entry_argv_and_verdict(tmp_path: Path) -> None:
    suite = parse_suite("entries:\n  - rdkafka-suite: {timeout: 120, tests: '0001,0045'}\n")
    [entry] = suite.entries
    assert entry == RdkafkaSuiteEntry(2, 120.0, "0001,0045")
    launcher = Launcher(tmp_path / "store", tmp_path / "logs", python="py")
    argv = launcher.argv(PlannedRun(0, entry, 1))
    assert argv == ["py", "-m", "harness.cli", "bench", "rdkafka-suite", "--out",
                    str(tmp_path / "store" / "rdkafka-suite"), "--timeout", "120",
                    "--tests", "0001,0045"]  # fmt: skip
    tsv = tmp_path / "rdkafka-suite.tsv"
    tsv.write_text("test\tname\tverdict\tseconds\tfirst_error\n")
    for code, verdict in ((0, "as-expected"), (1, "unexpected"), (2, "error")):
        rec = RunRecord(0, "rdkafka-suite", "rdkafka-suite", 1, RAN, exit_code=code)
        out = "unexpected failures: 0090_idempotence\n" if code == 1 else ""
        rdkafka_suite_record(rec, out + f"{tsv}\n")
        assert rec.verdict == verdict and rec.report == str(tsv)
        assert rec.run_dir is None  # no history for the night's checker
        if code == 1:
            assert rec.reason == "unexpected failures: 0090_idempotence"
    for bad, where, problem in (("rdkafka-suite: {tests: '1,2'}", ":2:", "4-digit"),
                                ("rdkafka-suite: {}\n    seeds: 2", ":3:", "not valid")):
        with pytest.raises(PlanError) as err:
            parse_suite(f"entries:\n  - {bad}\n")
        assert where in str(err.value) and problem in str(err.value), str(err.value)


def test_what_a_test_checks_comes_from_its_own_comment(tmp_path: Path) -> None:
    from harness.bench.rdkafka_suite import what_it_checks

    (tmp_path / "0082-fetch_max_bytes.cpp").write_text(
        "/*\n * librdkafka - Apache Kafka C library\n *\n * Copyright (c) 2016, Magnus\n */\n"
        "#include <iostream>\n/**\n * @brief Test fetch.max.bytes\n *\n *  - Produce\n */\n")
    assert what_it_checks(tmp_path, "0082") == "Test fetch.max.bytes"
    assert what_it_checks(tmp_path, "0001") == ""


def test_client_version_from_the_source_header(tmp_path: Path) -> None:
    from harness.bench.rdkafka_suite import client_version

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "rdkafka.h").write_text("#define RD_KAFKA_VERSION 0x020002ff\n")
    assert client_version(tmp_path) == "2.0.2"
    assert client_version(tmp_path / "nothing") == "unknown"
