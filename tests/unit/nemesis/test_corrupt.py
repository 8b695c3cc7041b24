"""corrupt-file: which file is damaged, how (bit flips or a cut tail, reproducible from the step's
seed), its plan validation, and the handler's call on a stopped broker."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from harness.cluster.corrupt import CorruptError, damage, pick
from harness.plan import PlanError, load_plan
from harness.plan.model import Step
from harness.plan.targets import Target
from tests.unit.nemesis.test_handlers import FakeCluster, _fault

NAMES = ["00000000000000000000.log", "00000000000000000000.index",
         "00000000000000000120.log", "00000000000000000120.index", "leader-epoch-checkpoint"]


def test_pick_takes_the_newest_segment_or_index_or_the_named_checkpoint() -> None:
    assert pick(NAMES, "segment") == "00000000000000000120.log"
    assert pick(NAMES, "index") == "00000000000000000120.index"
    assert pick(NAMES, "leader-epoch-checkpoint") == "leader-epoch-checkpoint"
    with pytest.raises(CorruptError, match="no replication-offset-checkpoint"):
        pick(NAMES, "replication-offset-checkpoint")


def test_damage_flips_n_bits_in_distinct_bytes_reproducibly_or_cuts_the_tail() -> None:
    data = bytes(range(64))
    out, what = damage(data, "flip", 3, random.Random("7:2"))
    diff = [i for i in range(64) if out[i] != data[i]]
    assert len(diff) == 3 and len(out) == 64
    assert all(bin(out[i] ^ data[i]).count("1") == 1 for i in diff)
    assert damage(data, "flip", 3, random.Random("7:2")) == (out, what)  # same seed, same bits
    assert all(f"{i}." in what for i in diff)
    cut, what = damage(data, "truncate", 10, random.Random(0))
    assert cut == data[:54] and what == "cut the last 10 of 64 bytes"
    with pytest.raises(CorruptError, match="empty"):
        damage(b"", "flip", 1, random.Random(0))


def test_handler_damages_each_target_and_notes_what_it_did() -> None:
    class Corruptible(FakeCluster):
        def corrupt_file(self, *args: object) -> str:
            self.calls.append(("corrupt_file", *args[:4]))
            return "/data/t-0/0.log: flipped"

    cluster = Corruptible()
    step = Step(action="corrupt-file", name="c", at=0, target=Target("broker", brokers=(2,)),
                params={"file": "segment", "partition": "t-0", "how": "flip", "bytes": 2})
    fault, _ = _fault(step, cluster)
    assert fault.undo is None and fault.extra == {}
    fault.act()
    assert cluster.calls == [("corrupt_file", "broker-2", "segment", "t-0", "flip")]
    assert fault.notes == ["broker-2: /data/t-0/0.log: flipped"]


def test_plan_needs_a_partition_except_for_the_replication_checkpoint(tmp_path: Path) -> None:
    from tests.unit.plan.conftest import BASE

    step = ("    action: kill\n    target: {leader: t-0}\n    duration: 3\n",
            "    action: corrupt-file\n    target: {broker: 2}\n    file: segment\n")
    path = tmp_path / "p.yaml"
    path.write_text(BASE.replace(*step))
    with pytest.raises(PlanError, match=r":\d+: faults\[0\]\.partition: file segment needs a"):
        load_plan(path)
    path.write_text(BASE.replace(step[0], step[1].replace("segment", "segment\n    "
                                                          "partition: t-0\n    how: truncate")))
    (s,) = load_plan(path).faults
    assert s.params == {"file": "segment", "partition": "t-0", "how": "truncate", "bytes": 1}
    path.write_text(BASE.replace(step[0], step[1].replace("segment",
                                                          "replication-offset-checkpoint")))
    assert load_plan(path).faults[0].params["partition"] is None
