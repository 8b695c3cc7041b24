"""TopicAdminApis: DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs on a broker.

The changes are forwarded to the controller (controller/topic_admin_apis.py writes
RemoveTopic / PartitionRecord / ConfigRecord; a lone broker's is in its own process,
server/combined.py), and the broker waits (bounded) until its own metadata image shows the
result before answering, so the client's next request sees it; brokers delete a deleted
topic's logs and re-read min.insync.replicas when they apply the records
(ReplicaManager.apply_metadata_delta). DescribeConfigs answers from the image.
Config names, types and defaults: server/configs.py (which also says which configs are only
stored, not enforced). Kafka's error codes per topic/resource; a malformed entry never fails
the others.
"""

from __future__ import annotations

from typing import Any

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import Request
from broker_app.protocol.error_codes import Errors

from .api_common import BrokerContext, respond
from .configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ConfigError,
    describe_broker,
    describe_group,
    describe_topic,
)


class TopicAdminApis:
    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Any]:
        return {ApiKey.DELETE_TOPICS: self.handle_delete_topics,
                ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
                ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs,
                ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
                ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs}

    # --- DeleteTopics ----------------------------------------------------------------------

    def handle_delete_topics(self, request: Request) -> Any:
        return self.broker.cluster.forward_and_wait(request.body, lambda resp, image: all(
            r.name not in image.topics for r in resp.responses
            if r.error_code.value == Errors.NONE))  # fmt: skip

    # --- CreatePartitions ------------------------------------------------------------------

    def handle_create_partitions(self, request: Request) -> Any:
        counts = {t.name: int(t.count) for t in request.body.topics}

        def applied(resp: Any, image: Any) -> bool:
            return all(r.name in image.topics
                       and len(image.topics[r.name].partitions) >= counts.get(r.name, 0)
                       for r in resp.results if r.error_code.value == Errors.NONE)  # fmt: skip

        return self.broker.cluster.forward_and_wait(request.body, applied)

    # --- DescribeConfigs -------------------------------------------------------------------

    def handle_describe_configs(self, request: Request) -> Any:
        results = []
        for res in request.body.resources:
            keys = None if res.configuration_keys is None else list(res.configuration_keys)
            out: dict[str, Any] = {"error_code": Errors.NONE, "error_message": None,
                                   "resource_type": res.resource_type,
                                   "resource_name": res.resource_name, "configs": []}  # fmt: skip
            try:
                out["configs"] = self._describe(res.resource_type, res.resource_name, keys)
            except ConfigError as e:
                out.update(error_code=e.error_code, error_message=str(e))
            results.append(out)
        return respond(request, {"throttle_time": 0, "results": results})

    def _describe(self, rtype: int, name: str, keys: list[str] | None) -> list[dict[str, Any]]:
        config = self.broker.config
        if rtype == RESOURCE_TOPIC:
            stored = self._topic_configs(name)
            if stored is None:
                raise ConfigError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"topic {name!r} does not exist")  # fmt: skip
            return describe_topic(stored, config, keys)
        if rtype == RESOURCE_BROKER:
            if name not in ("", str(config.node_id)):
                raise ConfigError(Errors.INVALID_REQUEST,
                                  f"this is broker {config.node_id}, not {name!r}")  # fmt: skip
            dynamic = dict(self.broker.cluster.image.broker_configs)
            return describe_broker(config, keys, dynamic)
        if rtype == RESOURCE_GROUP:
            if not name:
                raise ConfigError(Errors.INVALID_REQUEST, "Group name must not be empty")
            stored = self.broker.cluster.image.group_configs.get(name, {})
            return describe_group(dict(stored), keys)
        raise ConfigError(Errors.INVALID_REQUEST, f"unsupported resource type {rtype}")

    def _topic_configs(self, name: str) -> dict[str, str] | None:
        topic = self.broker.cluster.image.topics.get(name)
        return None if topic is None else dict(topic.configs)

    # --- AlterConfigs / IncrementalAlterConfigs ---------------------------------------------

    def handle_alter_configs(self, request: Request) -> Any:
        return self._alter(request, incremental=False)

    def handle_incremental_alter_configs(self, request: Request) -> Any:
        return self._alter(request, incremental=True)

    def _alter(self, request: Request, incremental: bool) -> Any:
        body = request.body
        return self.broker.cluster.forward_and_wait(body, lambda resp, image: self._configs_applied(
            body, resp, image, incremental))  # fmt: skip

    @staticmethod
    def _configs_applied(body: Any, resp: Any, image: Any, incremental: bool) -> bool:
        """Every topic (and broker or group resource) the controller changed shows the
        requested values in our image."""
        ok = {(r.resource_type, r.resource_name) for r in resp.responses
              if r.error_code.value == Errors.NONE}
        for res in body.resources:
            name = res.resource_name
            if res.resource_type == RESOURCE_BROKER:
                configs = image.broker_configs.get(name, {})
            elif res.resource_type == RESOURCE_GROUP:
                configs = image.group_configs.get(name, {})
            else:
                topic = image.topics.get(name)
                configs = None if topic is None else topic.configs
            if (res.resource_type, name) not in ok or configs is None:
                continue
            for c in res.configs or ():
                op = int(getattr(c, "config_operation", 0))
                value = (c.value or "").strip()
                listed = [v.strip() for v in configs.get(c.name, "").split(",")]
                if op == 0 and configs.get(c.name) != value:  # SET
                    return False
                if op == 1 and c.name in configs:  # DELETE
                    return False
                if op == 2 and not set(value.split(",")) <= set(listed):  # APPEND
                    return False
                if op == 3 and set(value.split(",")) & set(listed):  # SUBTRACT
                    return False
        return True
