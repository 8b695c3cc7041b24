"""respond: hand a parked request's answer to the edge when it is ready (both runtimes).

KafkaApis.handle answers most requests at once; two kinds it parks in ReplicaManager's
purgatories, and this is where each edge (server/network.py's connections in production,
SimBroker's handler on the simulator) gets their answer, through the same code:
- an acks=all produce (`Deferred`): when the produce purgatory completes or expires it;
- a fetch waiting for min_bytes (`DelayedFetch`): as soon as the fetch purgatory says it is
  ready, or max_wait_ms later, whichever is first. The response is built at that moment
  (`complete(True)`), as Kafka's DelayedFetch.onComplete builds it in the thread that
  completed it; `give_up()` first stops the purgatory watching a fetch that timed out. If
  building it fails (a bug), the answer is CloseConnection, so no connection waits for ever.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker_app.env import Env

from .kafka_apis import CloseConnection, Deferred, DelayedFetch

log = logging.getLogger(__name__)


def is_parked(result: Any) -> bool:
    return isinstance(result, Deferred | DelayedFetch)


def respond(env: Env, result: Deferred | DelayedFetch, reply: Callable[[Any], None]) -> None:
    """Call `reply(response)` once, when the parked `result` has its answer."""
    if isinstance(result, Deferred):
        result.add_callback(reply)
        return
    answered = False

    def finish(_value: object = None) -> None:
        nonlocal answered
        if answered:
            return
        answered = True
        timer.cancel()
        try:
            result.give_up()  # no-op if the purgatory completed it
            response = result.complete(True)
        except Exception as e:  # a bug: the connection closes rather than wait for ever
            log.exception("building a parked fetch's response failed")
            response = CloseConnection(f"fetch response failed: {type(e).__name__}: {e}")
        reply(response)

    timer = env.call_later(result.max_wait_ms, finish)
    result.ready.add_callback(finish)
