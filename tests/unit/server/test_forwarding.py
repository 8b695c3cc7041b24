"""ClusterLink.forward retries at the next controller when a standby answers NOT_CONTROLLER:
answers_not_controller is how it recognises that answer, at the top level or per entry."""

from __future__ import annotations

import datetime

from broker_app.protocol.codec import response_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.cluster_link import answers_not_controller


def _create_topics_answer(code: int) -> object:
    return build(response_class(19, 7), {
        "throttle_time": datetime.timedelta(0),
        "topics": [{"name": "ok", "topic_id": None, "error_code": 0, "error_message": None,
                    "num_partitions": 1, "replication_factor": 1, "configs": []},
                   {"name": "t", "topic_id": None, "error_code": code, "error_message": None,
                    "num_partitions": 1, "replication_factor": 1, "configs": []}],
    })  # fmt: skip


def _heartbeat_answer(code: int) -> object:
    return build(response_class(63, 0), {
        "throttle_time": datetime.timedelta(0), "error_code": code, "is_caught_up": False,
        "is_fenced": True, "should_shut_down": False,
    })  # fmt: skip


def test_not_controller_is_found_per_topic_and_at_the_top_level() -> None:
    assert answers_not_controller(_create_topics_answer(Errors.NOT_CONTROLLER))
    assert answers_not_controller(_heartbeat_answer(Errors.NOT_CONTROLLER))


def test_other_answers_are_passed_to_the_client() -> None:
    assert not answers_not_controller(_create_topics_answer(0))
    assert not answers_not_controller(_create_topics_answer(Errors.TOPIC_ALREADY_EXISTS))
    assert not answers_not_controller(_heartbeat_answer(0))
