"""The protocol fuzzer against a real broker, with a good acks=all producer beside it
(issue 15): 10,000 structure-aware mutated inputs of every advertised API, then the checks —
no process death, every input answered or its connection closed within 5 s (a hang detector,
not a speed check), RSS growth <= 100 MB, every acknowledged good message read back exactly
once, every batch on disk decodable. Long runs: `highwater bench fuzz --inputs 100000`."""

from __future__ import annotations

from harness.fuzz.runner import FuzzOptions, run_fuzz, summary


def test_fuzz_broker_10k_inputs_with_a_good_producer_beside_it() -> None:
    r = run_fuzz(FuzzOptions(inputs=10_000, seed=15, connections=8))
    print(summary(r))
    assert r.inputs == 10_000
    assert r.deaths == 0, r.problems
    assert r.hangs == 0, r.problems
    assert r.rss_growth_mb <= 100, summary(r)
    assert r.good_acked > 0 and r.good_lost == 0 and r.good_duplicated == 0, summary(r)
    assert r.batches_on_disk > 0 and r.undecodable_batches == 0, r.problems
    assert r.answered > 1000 and r.closed > 1000  # both outcomes were exercised
    assert r.traceback_lines == 0, ("client errors must not log tracebacks", r.problems)
    assert r.exit_code == 0, r.problems  # SIGTERM after the run: clean shutdown


def test_fuzz_controller_2k_inputs() -> None:
    r = run_fuzz(FuzzOptions(inputs=2_000, seed=16, connections=4, target="controller"))
    print(summary(r))
    assert r.deaths == 0 and r.hangs == 0, r.problems
    assert r.rss_growth_mb <= 100, summary(r)
    assert r.answered > 100 and r.closed > 100
    assert r.exit_code == 0, r.problems
