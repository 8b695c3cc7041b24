"""broker_app/env.py's contract, one suite for both runtimes: production's AsyncioEnv (real
time, short waits) and the simulator's SimEnv (virtual time). The broker's edge loops
(ClusterLink, ReplicaFetcherThread, respond) rely on exactly these rules on either."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from kio.index import load_request_schema

from broker_app.env import AsyncioEnv, Env
from broker_app.protocol.entities import build
from broker_app.server.network_client import ClientError
from broker_app.sim.env import SimEnv
from broker_app.sim.events import EventLoop, Process
from broker_app.sim.network import Network

Scenario = Callable[[Env, Any], Coroutine[Any, Any, Any]]


def run_asyncio(scenario: Scenario) -> Any:
    async def main() -> Any:
        with socket.socket() as s:  # a port nothing listens on: connect is refused
            s.bind(("127.0.0.1", 0))
            refused = ("127.0.0.1", s.getsockname()[1])
        return await asyncio.wait_for(scenario(AsyncioEnv(), refused), 10)

    return asyncio.run(main())


def run_sim(scenario: Scenario) -> Any:
    loop = EventLoop(seed=1)
    net = Network(loop)
    process = Process(loop, "me")
    process.start()
    net.add_node("me", process)
    net.add_node("down", Process(loop, "down"), lambda src, body, reply: reply(body))
    env = SimEnv(loop, net, process, "me")
    out: list[Any] = []

    async def main() -> None:
        out.append(await scenario(env, "down"))

    env.spawn(main())
    loop.run_until(60_000)
    assert out, "the scenario did not finish"
    return out[0]


RUNTIMES = {"asyncio": run_asyncio, "sim": run_sim}


@pytest.fixture(params=sorted(RUNTIMES))
def run(request: pytest.FixtureRequest) -> Callable[[Scenario], Any]:
    return RUNTIMES[request.param]


def test_sleep_moves_the_clock(run: Callable[[Scenario], Any]) -> None:
    async def scenario(env: Env, _peer: Any) -> int:
        start = env.now_ms()
        await env.sleep(30)
        return env.now_ms() - start

    assert run(scenario) >= 29  # asyncio may wake a hair early on a coarse clock


def test_wait_is_true_when_set_and_false_after_the_timeout(run: Callable[[Scenario], Any]) -> None:
    async def scenario(env: Env, _peer: Any) -> tuple[bool, bool, bool, bool]:
        event = env.event()
        env.call_later(10, event.set)
        woken = await env.wait(event, 5_000)
        already = await env.wait(event, 0)  # set before the wait: at once
        event.clear()
        start = env.now_ms()
        timed_out = await env.wait(event, 20)
        return woken, already, timed_out, env.now_ms() - start >= 19

    assert run(scenario) == (True, True, False, True)


def test_set_wakes_a_waiter_on_a_later_turn_not_inside_the_caller(
    run: Callable[[Scenario], Any],
) -> None:
    async def scenario(env: Env, _peer: Any) -> list[str]:
        event = env.event()
        seen: list[str] = []

        async def waiter() -> None:
            await env.wait(event, None)
            seen.append("woken")

        env.spawn(waiter())
        await env.sleep(5)
        event.set()
        seen.append("set returned")
        await env.sleep(5)
        return seen

    assert run(scenario) == ["set returned", "woken"]


def test_a_cancelled_timer_and_a_cancelled_task_never_run(run: Callable[[Scenario], Any]) -> None:
    async def scenario(env: Env, _peer: Any) -> list[str]:
        ran: list[str] = []
        env.call_later(10, lambda: ran.append("timer")).cancel()
        env.call_later(10, lambda: ran.append("kept"))

        async def loop() -> None:
            while True:
                await env.sleep(5)
                ran.append("tick")

        task = env.spawn(loop())
        await env.sleep(12)
        task.cancel()
        ticks = ran.count("tick")
        await env.sleep(30)
        assert ran.count("tick") == ticks
        return [r for r in ran if r != "tick"]

    assert run(scenario) == ["kept"]


def test_a_future_keeps_its_first_value(run: Callable[[Scenario], Any]) -> None:
    async def scenario(env: Env, _peer: Any) -> Any:
        fut = env.future()
        env.call_later(5, lambda: fut.set_result("first"))
        env.call_later(6, lambda: fut.set_result("second"))
        value = await fut
        await env.sleep(5)
        return value

    assert run(scenario) == "first"


def test_a_send_to_a_peer_that_is_not_there_is_a_client_error(
    run: Callable[[Scenario], Any],
) -> None:
    async def scenario(env: Env, peer: Any) -> str:
        channel = env.connect(peer, "t", 2_000)
        body = build(load_request_schema(18, 3),
                     {"client_software_name": "t", "client_software_version": "1"})
        try:
            await channel.send(body)
        except ClientError as e:
            return str(e)
        finally:
            channel.close()
        return "answered"

    assert str(run(scenario)).startswith("ApiVersionsRequest to ")
