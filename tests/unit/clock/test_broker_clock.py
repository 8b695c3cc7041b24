"""The broker's clock seam (broker_app/clock.py) and the `clock` nemesis that drives it: the
skew reaches every time the broker reads, a forward jump expires group sessions, and the
admin POST /clock, the plan table and the nemesis handler carry it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from broker_app.admin.server import AdminServer
from broker_app.clock import BrokerClock
from broker_app.config import BrokerConfig
from broker_app.protocol.apis import ApiKey
from broker_app.protocol.error_codes import Errors as E
from harness.nemesis.handlers import heal_everything
from harness.plan import PlanError, load_plan
from harness.plan.model import Step
from harness.plan.targets import Target
from tests.unit.nemesis.test_handlers import FakeCluster, _fault
from tests.unit.plan.conftest import BASE
from tests.unit.protocol.lone_broker import LoneBroker
from tests.unit.protocol.test_group_apis import _call, _find, _join


class FakeTime:
    def __init__(self) -> None:
        self.s = 1000.0

    def __call__(self) -> float:
        return self.s


def test_skew_shifts_both_clocks_and_strobe_alternates() -> None:
    t = FakeTime()
    clock = BrokerClock(now_s=t, wall_s=t)
    assert (clock.wall_ms(), clock.monotonic_ms()) == (1_000_000, 1_000_000)
    clock.skew(-5000)
    assert (clock.wall_ms(), clock.monotonic_ms()) == (995_000, 995_000)
    clock.skew(60_000, strobe_period_ms=1000)
    assert clock.offset_ms() == 60_000
    t.s += 1.0
    assert clock.offset_ms() == 0
    t.s += 1.0
    assert clock.monotonic_ms() == 1_002_000 + 60_000
    clock.skew(0)
    assert clock.describe() == {"offset_ms": 0, "skew_ms": 0, "strobe_period_ms": 0}
    with pytest.raises(ValueError, match="strobe period"):
        clock.skew(1, -1)


def test_a_forward_jump_expires_group_sessions_and_reaches_every_log(tmp_path: Path) -> None:
    """Kafka's group session timeouts run on the broker's clock: jumping it past
    session.timeout.ms removes a member that heartbeats on time in real time."""
    config = BrokerConfig(node_id=1, data_dir=tmp_path / "d", port=9092,
                          offsets_topic_num_partitions=1, group_initial_rebalance_delay_ms=0)
    broker = LoneBroker(config)
    try:
        clock = broker.apis.groups.clock
        broker.create_topic("t")
        assert _find(broker).error_code.value == E.NONE
        member = _join(broker, _join(broker).member_id).member_id
        heartbeat = {"group_id": "g", "generation_id": 1, "member_id": member,
                     "group_instance_id": None}
        broker.apis.groups.tick()
        assert _call(broker, ApiKey.HEARTBEAT, 4, heartbeat).error_code.value == E.NONE
        clock.skew(11_000)  # the member's session timeout is 10 s
        broker.apis.groups.tick()
        assert _call(broker, ApiKey.HEARTBEAT, 4, heartbeat).error_code.value == E.UNKNOWN_MEMBER_ID
        # the same seam times the ReplicaManager and stamps every log's wall clock
        log = broker.log_manager.get_log(("t", 0))
        assert abs(log.wall_clock_ms() - clock.wall_ms()) < 1000
        assert broker.replica_manager.clock() - clock.monotonic_ms() <= 0
        clock.skew(0)
        assert abs(log.wall_clock_ms() - clock.wall_ms()) < 1000
    finally:
        broker.close()


def _post(server: AdminServer, target: str) -> tuple[int, dict]:
    async def go() -> tuple[int, dict]:
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"POST {target} HTTP/1.1\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            raw = await asyncio.wait_for(reader.read(), 5)
            writer.close()
        finally:
            await server.stop()
        head, body = raw.split(b"\r\n\r\n", 1)
        return int(head.split()[1]), json.loads(body)

    return asyncio.run(go())


def test_admin_post_clock_skews_and_refuses_nonsense() -> None:
    clock = BrokerClock()
    server = AdminServer("127.0.0.1", 0, dict, clock)
    status, answer = _post(server, "/clock?offset_ms=-30000&strobe_period_ms=500")
    assert status == 200 and answer["skew_ms"] == -30000 and answer["strobe_period_ms"] == 500
    for bad in ("/clock", "/clock?offset_ms=soon", "/clock?offset_ms=1&strobe_period_ms=-1",
                f"/clock?offset_ms={10**15}"):
        status, answer = _post(server, bad)
        assert status == 400 and "offset_ms" in answer["error"], bad
    assert clock.describe()["skew_ms"] == -30000  # a refused request changes nothing
    assert _post(AdminServer("127.0.0.1", 0, dict), "/clock?offset_ms=1")[0] == 404


def test_handler_skews_each_target_and_undo_and_heal_reset_it() -> None:
    step = Step(action="clock", name="c", at=0, target=Target("broker", brokers=(2,)),
                duration=5, params={"ms": 40_000, "strobe_period_ms": 0})
    fault, cluster = _fault(step)
    assert fault.extra == {"ms": 40_000, "strobe_period_ms": 0}
    fault.act()
    fault.undo()
    assert cluster.calls == [("skew_clock", "broker-2", 40_000, 0), ("skew_clock", "broker-2", 0)]
    healed = FakeCluster()
    heal_everything(healed)
    assert ("reset_skewed_clocks",) in healed.calls


def test_plan_validates_clock_steps_with_file_and_line(tmp_path: Path) -> None:
    kill = "    action: kill\n    target: {leader: t-0}\n    duration: 3\n"
    path = tmp_path / "p.yaml"
    path.write_text(BASE.replace(kill, "    action: clock\n    target: {leader: t-0}\n"
                                       "    duration: 3\n    ms: -40000\n"))
    (s,) = load_plan(path).faults
    assert s.params == {"ms": -40000, "strobe_period_ms": 0}
    path.write_text(BASE.replace(kill, "    action: clock\n    target: {leader: t-0}\n"))
    with pytest.raises(PlanError, match=r"p\.yaml:14: faults\[0\]\.ms: action .clock. needs ms"):
        load_plan(path)
    path.write_text(BASE.replace(kill, "    action: clock\n    target: {leader: t-0}\n"
                                       "    ms: 100000000\n"))
    with pytest.raises(PlanError, match=r"p\.yaml:18: faults\[0\]\.ms: must be <= "):
        load_plan(path)


def test_a_clock_on_fixed_sources_reads_them_and_refuses_a_skew() -> None:
    """The simulator's clock (BrokerClock.of_ms): its readers get the virtual time itself,
    so a skew could not reach them; it is refused rather than half applied."""
    now = [5]
    clock = BrokerClock.of_ms(lambda: now[0], lambda: now[0] + 2)
    now[0] = 9
    assert (clock.monotonic_ms(), clock.wall_ms()) == (9, 11)
    with pytest.raises(ValueError, match="never skewed"):
        clock.skew(1_000)
