"""The simulated network and processes: FIFO links, cuts lose messages (the caller times out),
a down process refuses at once, a paused one answers late, a dead incarnation never runs."""

from __future__ import annotations

from typing import Any

from broker_app.sim.events import EventLoop, Process
from broker_app.sim.network import Network


def _net() -> tuple[EventLoop, Network, Process, Process, list[Any]]:
    loop = EventLoop(1)
    net = Network(loop, (1, 5))
    a, b = Process(loop, "a"), Process(loop, "b")
    a.start()
    b.start()
    seen: list[Any] = []

    def echo(src: str, msg: Any, reply: Any) -> None:
        seen.append((loop.now_ms, msg))
        reply(msg * 10)

    net.add_node("a", a)
    net.add_node("b", b, echo)
    return loop, net, a, b, seen


def test_fifo_per_link_and_replies() -> None:
    loop, net, _a, _b, seen = _net()
    got: list[Any] = []
    for i in range(20):
        net.rpc("a", "b", i, got.append, got.append, 1000)
    loop.run_until(100)
    assert [m for _, m in seen] == list(range(20))
    assert got == [i * 10 for i in range(20)]


def test_cut_loses_the_message_and_the_caller_times_out() -> None:
    loop, net, _a, _b, seen = _net()
    got: list[Any] = []
    net.cut("a", "b")
    net.rpc("a", "b", 1, got.append, got.append, 500)
    loop.run_until(499)
    assert got == [] and seen == []
    loop.run_until(500)
    assert got == ["timeout after 500 ms"]
    net.heal()
    net.rpc("a", "b", 2, got.append, got.append, 500)
    loop.run_until(1000)
    assert got[-1] == 20


def test_one_way_cut_drops_the_answers_not_the_requests() -> None:
    """A blackhole from b to a: b still gets a's requests (and acts on them), its answers are
    lost, also one already in flight when the cut is made; undoing it closes the call."""
    loop, net, _a, _b, seen = _net()
    net.fault("b", "a").latency_ms = 100
    got: list[Any] = []
    net.rpc("a", "b", 1, got.append, got.append, 5000)
    loop.run_until(50)
    assert [m for _, m in seen] == [1]  # answered, the answer is on the slow way back
    net.cut("b", "a", both=False)
    assert not net.is_cut("a", "b")
    net.rpc("a", "b", 2, got.append, got.append, 5000)
    loop.run_until(1000)
    assert [m for _, m in seen] == [1, 2] and got == []
    net.uncut("b", "a", both=False)
    loop.run_until(1010)
    assert got == ["connection closed by the heal"] * 2


def test_down_process_refuses_fast_and_paused_one_answers_after_resume() -> None:
    loop, net, _a, b, seen = _net()
    got: list[Any] = []
    b.kill()
    net.rpc("a", "b", 1, got.append, got.append, 5000)
    loop.run_until(20)
    assert got == ["connection to b refused"]
    b.start()
    b.pause()
    net.rpc("a", "b", 2, got.append, got.append, 5000)
    loop.run_until(1000)
    assert seen == [] and len(got) == 1
    b.resume()
    loop.run_until(1100)
    assert seen and seen[0][0] >= 1000 and got[-1] == 20


def test_timers_of_a_dead_incarnation_never_run() -> None:
    loop = EventLoop(1)
    p = Process(loop, "p")
    p.start()
    ran: list[int] = []
    p.call_later(10, lambda: ran.append(1))
    p.kill()
    p.start()
    p.call_later(10, lambda: ran.append(2))
    loop.run_until(50)
    assert ran == [2]
