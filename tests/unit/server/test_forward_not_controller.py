"""ClusterLink's check for a forwarded answer from a standby controller (NOT_CONTROLLER in a
top-level, per-topic or per-partition error code), on real kio response entities."""

from __future__ import annotations

from kio.index import load_response_schema

from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.cluster_link import answers_not_controller


def create_topics_response(code: Errors) -> object:
    return build(load_response_schema(19, 5), {
        "throttle_time": 0,
        "topics": [{"name": "t", "topic_id": None, "error_code": code, "error_message": None,
                    "num_partitions": 1, "replication_factor": 1, "configs": []}]})


def test_not_controller_in_a_topic_result_is_found() -> None:
    assert answers_not_controller(create_topics_response(Errors.NOT_CONTROLLER))
    assert not answers_not_controller(create_topics_response(Errors.NONE))
    assert not answers_not_controller(create_topics_response(Errors.TOPIC_ALREADY_EXISTS))


def test_not_controller_in_a_top_level_error_code_is_found() -> None:
    body = build(load_response_schema(43, 2), {
        "throttle_time": 0, "error_code": Errors.NOT_CONTROLLER, "replica_election_results": []})
    assert answers_not_controller(body)
