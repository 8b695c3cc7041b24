"""LoneBroker: a broker in combined mode inside the test's own process, driven by hand.

What `highwater broker` without --controller runs (server/main.serve): the one-voter
controller of server/combined.py (on its own thread) and the broker's parts of
server/main.build_broker, joined over 127.0.0.1 by the real ClusterLink, on an asyncio loop of
this thread. `handle(request)` hands a decoded request to KafkaApis and runs the loop until its
answer is there (a forwarded request's coroutine, an acks=all produce's Deferred); a
DelayedFetch comes back as it is, for the test to complete; `submit` returns what KafkaApis
returned, unresolved. The broker's loop runs only inside these calls: its timers
(ReplicaManager.tick, the group coordinator's tick) run when a test calls them. Every wait is
bounded (TIMEOUT_S).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from broker_app.config import BrokerConfig
from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import decode_request, encode_request, request_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.combined import CombinedController
from broker_app.server.kafka_apis import Deferred, KafkaApis
from broker_app.server.main import build_broker

TIMEOUT_S = 10.0


class LoneBroker:
    def __init__(self, config: BrokerConfig) -> None:
        self.loop = asyncio.new_event_loop()
        self.combined = CombinedController(config)  # on its own thread, as in production
        self.config = self.combined.start()
        try:
            self.apis: KafkaApis
            self.apis, self.log_manager = build_broker(self.config)
            self.link = self.apis.cluster

            async def start() -> None:
                self.link.start()  # its tasks on this loop

            self.loop.run_until_complete(start())
            self.run_until(lambda: self.link.lifecycle.ready_to_serve, "unfenced")
        except BaseException:
            self.close()
            raise

    @property
    def replica_manager(self) -> Any:
        return self.apis.replica_manager

    def run_until(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not done():
            if time.monotonic() > deadline:
                raise TimeoutError(f"not {what} within {TIMEOUT_S} s")
            self.loop.run_until_complete(asyncio.sleep(0.005))

    def submit(self, request: Any) -> Any:
        """KafkaApis' immediate result for a decoded request (a response, a Deferred, a
        DelayedFetch, a coroutine...), the handler called on the loop as server/network.py
        calls it (a handler may start tasks)."""

        async def on_loop() -> Any:
            return self.apis.handle(request)

        return self.loop.run_until_complete(on_loop())

    def resolve(self, result: Any) -> Any:
        """The answer a result becomes: a forwarded request's coroutine awaited, a Deferred
        (an acks=all produce) waited for; anything else as it is."""

        async def answer() -> Any:
            if asyncio.iscoroutine(result):
                return await result
            if isinstance(result, Deferred):
                done: asyncio.Future[Any] = self.loop.create_future()
                result.add_callback(lambda value: done.done() or done.set_result(value))
                return await done
            return result

        return self.loop.run_until_complete(asyncio.wait_for(answer(), TIMEOUT_S))

    def handle(self, request: Any) -> Any:
        """KafkaApis' answer to a decoded request, awaited if it comes later."""
        return self.resolve(self.submit(request))

    def call(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        """Build, encode, decode and handle one request of `api_key` at `version`."""
        body = build(request_class(api_key, version), data)
        return self.handle(decode_request(encode_request("test", 1, body)[4:]))

    def create_topic(self, name: str, partitions: int = 1, **configs: str) -> Any:
        """CreateTopics through the broker (forwarded to its controller); the topic's id once
        the broker hosts every partition."""
        resp = self.call(ApiKey.CREATE_TOPICS, 7, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": [{"name": k.replace("_", "."), "value": v}
                                                       for k, v in configs.items()]}],
            "timeout": 5000, "validate_only": False})  # fmt: skip
        [t] = resp.topics
        assert t.error_code.value == Errors.NONE, t.error_message
        self.run_until(lambda: all(self.replica_manager.get_partition(name, p) is not None
                                   for p in range(partitions)), f"hosting {name}")  # fmt: skip
        return t.topic_id

    def topic(self, name: str) -> Any:
        """The topic in the broker's metadata image (None if it has none)."""
        return self.link.image.topics.get(name)

    def find_coordinator(self, group: str) -> Any:
        """FindCoordinator for `group`, asked again (as clients do) while the broker creates
        and loads __consumer_offsets; the group coordinator's timer (server/main.py's tick
        loop) runs between the asks."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            resp = self.call(ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            if resp.error_code.value == Errors.NONE:
                return resp
            if time.monotonic() > deadline:
                raise TimeoutError(f"no coordinator for {group!r}: {resp.error_message}")
            self.apis.groups.tick()
            self.loop.run_until_complete(asyncio.sleep(0.01))

    def wait_for_topic(self, name: str) -> Any:
        """The topic once the broker's image has it (created in the background: auto-create,
        __consumer_offsets)."""
        self.run_until(lambda: self.topic(name) is not None, f"{name} created")
        return self.topic(name)

    def close(self) -> None:
        """Stop the broker's link and the controller, then whatever else still runs on the
        loop (connection handlers), shut the logs down and close the loop."""

        async def stop() -> None:
            link = getattr(self, "link", None)
            if link is not None:
                await link.stop()
            await self.combined.stop()

        async def cancel_the_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            self.loop.run_until_complete(asyncio.wait_for(stop(), TIMEOUT_S))
        finally:
            try:
                self.loop.run_until_complete(cancel_the_rest())
            finally:
                if hasattr(self, "log_manager"):
                    self.log_manager.shutdown()
                self.loop.close()
