"""Topic admin requests on the controller: DeleteTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs, wire request -> QuorumController operation -> wire response.

Brokers forward these unchanged (server/cluster_link.py), as Kafka's brokers forward them to
the KRaft controller (KIP-590). Config values are validated here against the one catalogue
(server/configs.py) before the controller writes ConfigRecords; a bad entry fails its whole
resource, as Kafka's ConfigurationControlManager does. Resource types: TOPIC, and BROKER (KIP-226
dynamic broker configs: a registered broker id, or "" for the cluster-wide default; only the
names in configs.DYNAMIC_BROKER_CONFIGS, written as BrokerConfig records), and GROUP (KIP-848
group configs: any non-empty group id, configs.GROUP_CONFIGS, written as GroupConfig records);
any other type is INVALID_REQUEST.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker_app.protocol.codec import Request
from broker_app.server.api_common import respond
from broker_app.server.configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ConfigError,
    topic_changes,
)

from .errors import Errors
from .messages import NewPartitions
from .quorum_controller import QuorumController


def handle_delete_topics(controller: QuorumController, request: Request, now_ms: int) -> Any:
    body = request.body
    if hasattr(body, "topics"):  # v6: names or ids
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    results, _ = controller.delete_topics(wanted, now_ms)
    return respond(request, {"throttle_time": 0, "responses": [
        {"name": r.name, "topic_id": r.topic_id or uuid.UUID(int=0), "error_code": r.error,
         "error_message": r.message} for r in results]})  # fmt: skip


def handle_create_partitions(controller: QuorumController, request: Request, now_ms: int) -> Any:
    body = request.body
    items = [NewPartitions(t.name, int(t.count), None if t.assignments is None else
                           [tuple(a.broker_ids) for a in t.assignments])
             for t in body.topics]  # fmt: skip
    results, _ = controller.create_partitions(items, bool(body.validate_only), now_ms)
    return respond(request, {"throttle_time": 0, "results": [
        {"name": r.name, "error_code": r.error, "error_message": r.message}
        for r in results]})  # fmt: skip


def _alter(controller: QuorumController, request: Request, now_ms: int, incremental: bool) -> Any:
    body = request.body
    responses: list[dict[str, Any] | None] = []
    items: list[tuple[str, dict[str, str | None]]] = []
    slots: list[int] = []
    for res in body.resources:
        out = {"resource_type": res.resource_type, "resource_name": res.resource_name,
               "error_code": Errors.NONE, "error_message": None}  # fmt: skip
        try:
            if res.resource_type == RESOURCE_BROKER:
                _alter_broker(controller, res, incremental, bool(body.validate_only), now_ms)
                responses.append(out)
                continue
            if res.resource_type == RESOURCE_GROUP:
                _alter_group(controller, res, incremental, bool(body.validate_only), now_ms)
                responses.append(out)
                continue
            if res.resource_type != RESOURCE_TOPIC:
                raise ConfigError(Errors.INVALID_REQUEST,
                                  f"unsupported resource type {res.resource_type}")
            topic = controller.image.topics.get(res.resource_name)
            current = dict(topic.configs) if topic else {}
            changes = topic_changes(current, res.configs, incremental)
            slots.append(len(responses))
            items.append((res.resource_name, changes))
            responses.append(out)
        except ConfigError as e:
            out.update(error_code=e.error_code, error_message=str(e))
            responses.append(out)
    results, _ = controller.alter_topic_configs(items, bool(body.validate_only), now_ms)
    for slot, r in zip(slots, results, strict=True):
        entry = responses[slot]
        assert entry is not None
        entry.update(error_code=r.error, error_message=r.message)
    return respond(request, {"throttle_time": 0, "responses": responses})


def _alter_broker(controller: QuorumController, res: Any, incremental: bool,
                  validate_only: bool, now_ms: int) -> None:
    """One BROKER resource: validated against the dynamic broker configs, then committed as
    BrokerConfig records (ConfigError for an unknown broker or a bad entry)."""
    name = res.resource_name or ""
    if name and not (name.isdigit() and int(name) in controller.image.brokers):
        raise ConfigError(Errors.INVALID_REQUEST,
                          f"broker {name!r} is not registered (use a broker id, or \"\" for "
                          f"the cluster-wide default)")
    current = dict(controller.image.broker_configs.get(name, {}))
    changes = topic_changes(current, res.configs, incremental, kind="broker")
    controller.alter_broker_configs(name, changes, validate_only, now_ms)


def _alter_group(controller: QuorumController, res: Any, incremental: bool,
                 validate_only: bool, now_ms: int) -> None:
    """One GROUP resource: each value checked against GroupConfig's bounds, then committed as
    GroupConfig records."""
    name = res.resource_name or ""
    if not name:
        raise ConfigError(Errors.INVALID_REQUEST, "Default group resources are not allowed.")
    current = dict(controller.image.group_configs.get(name, {}))
    changes = topic_changes(current, res.configs, incremental, kind="group")
    controller.alter_group_configs(name, changes, validate_only, now_ms)


def handle_alter_configs(controller: QuorumController, request: Request, now_ms: int) -> Any:
    return _alter(controller, request, now_ms, incremental=False)


def handle_incremental_alter_configs(
    controller: QuorumController, request: Request, now_ms: int
) -> Any:
    return _alter(controller, request, now_ms, incremental=True)
