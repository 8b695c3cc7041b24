"""TopicAdminApis: DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs on a broker.

Cluster mode: the changes are forwarded to the controller (controller/topic_admin_apis.py
writes RemoveTopic / PartitionRecord / ConfigRecord), and the broker waits (bounded) until its
own metadata image shows the result before answering, so the client's next request sees it;
brokers delete a deleted topic's logs and re-read min.insync.replicas when they apply the
records (ReplicaManager.apply_metadata_delta). DescribeConfigs answers from the image.
Single-node mode: the same rules against the TopicStore (highwater-topics.json).
Config names, types and defaults: server/configs.py (which also says which configs are only
stored, not enforced). Kafka's error codes per topic/resource; a malformed entry never fails
the others.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from broker_app.protocol.apis import ApiKey
from broker_app.protocol.codec import Request
from broker_app.protocol.error_codes import Errors

from .configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ConfigError,
    describe_broker,
    describe_group,
    describe_topic,
    topic_changes,
)

if TYPE_CHECKING:
    from .kafka_apis import KafkaApis


class TopicAdminApis:
    def __init__(self, apis: KafkaApis) -> None:
        self.apis = apis

    def handlers(self) -> dict[int, Any]:
        return {ApiKey.DELETE_TOPICS: self.handle_delete_topics,
                ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
                ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs,
                ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
                ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs}

    # --- DeleteTopics ----------------------------------------------------------------------

    def handle_delete_topics(self, request: Request) -> Any:
        body = request.body
        if hasattr(body, "topics"):  # v6: by name or by id
            wanted = [(t.name, t.topic_id) for t in body.topics]
        else:
            wanted = [(n, None) for n in body.topic_names]
        cluster = self.apis.cluster
        if cluster is not None:
            return cluster.forward_and_wait(body, lambda resp, image: all(
                r.name not in image.topics for r in resp.responses
                if r.error_code.value == Errors.NONE))  # fmt: skip
        names = [n for n, _ in wanted if n]
        out = []
        for name, topic_id in wanted:
            entry = {"name": name, "topic_id": topic_id or uuid.UUID(int=0),
                     "error_code": Errors.NONE, "error_message": None}  # fmt: skip
            store = self.apis.topics
            info = store.get(name) if name else store.by_id.get(topic_id)  # type: ignore[arg-type]
            if name and topic_id is not None and topic_id.int != 0:
                entry.update(error_code=Errors.INVALID_REQUEST,
                             error_message="give a topic name or a topic id, not both")
            elif name and names.count(name) > 1:
                entry.update(error_code=Errors.INVALID_REQUEST,
                             error_message=f"duplicate topic name {name!r}")
            elif info is None:
                entry.update(error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION if name
                             else Errors.UNKNOWN_TOPIC_ID, error_message="no such topic")
            elif info.name.startswith("__"):
                entry.update(error_code=Errors.INVALID_REQUEST,
                             error_message=f"internal topic {info.name!r} cannot be deleted")
            else:
                store.delete(info.name)
                for p in range(info.num_partitions):
                    self.apis.replica_manager.stop_replica(info.name, p, delete=True)
                entry.update(name=info.name, topic_id=info.topic_id)
            out.append(entry)
        return self.apis._respond(request, {"throttle_time": 0, "responses": out})

    # --- CreatePartitions ------------------------------------------------------------------

    def handle_create_partitions(self, request: Request) -> Any:
        body = request.body
        cluster = self.apis.cluster
        if cluster is not None:
            counts = {t.name: int(t.count) for t in body.topics}

            def applied(resp: Any, image: Any) -> bool:
                return all(r.name in image.topics
                           and len(image.topics[r.name].partitions) >= counts.get(r.name, 0)
                           for r in resp.results if r.error_code.value == Errors.NONE)  # fmt: skip

            return cluster.forward_and_wait(body, applied)
        names = [t.name for t in body.topics]
        results = []
        for t in body.topics:
            code, msg = self._create_partitions_one(t, names.count(t.name) > 1,
                                                    bool(body.validate_only))  # fmt: skip
            results.append({"name": t.name, "error_code": code, "error_message": msg})
        return self.apis._respond(request, {"throttle_time": 0, "results": results})

    def _create_partitions_one(self, t: Any, duplicate: bool, validate_only: bool
                               ) -> tuple[int, str | None]:  # fmt: skip
        info = self.apis.topics.get(t.name)
        count = int(t.count)
        node = self.apis.config.node_id
        if duplicate:
            return Errors.INVALID_REQUEST, f"topic {t.name!r} appears more than once"
        if info is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {t.name!r} does not exist"
        have = info.num_partitions
        if count <= have:
            return Errors.INVALID_PARTITIONS, (
                f"Topic already has {have} partitions." if count == have else
                f"Topic currently has {have} partitions, which is higher than the requested "
                f"{count}.")  # fmt: skip
        if count - have > self.apis.config.max_partitions_per_create_request:
            return Errors.INVALID_PARTITIONS, f"{count - have} new partitions exceed the limit"
        if t.assignments is not None:
            if len(t.assignments) != count - have:
                return Errors.INVALID_REPLICA_ASSIGNMENT, (
                    f"{len(t.assignments)} assignments given for {count - have} new partitions")
            if any(list(a.broker_ids) != [node] for a in t.assignments):
                return Errors.INVALID_REPLICA_ASSIGNMENT, f"only broker {node} exists"
        if not validate_only:
            self.apis.topics.add_partitions(t.name, count)
            self.apis._host_topic(info)
        return Errors.NONE, None

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
        return self.apis._respond(request, {"throttle_time": 0, "results": results})

    def _describe(self, rtype: int, name: str, keys: list[str] | None) -> list[dict[str, Any]]:
        config = self.apis.config
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
            cluster = self.apis.cluster
            dynamic = dict(cluster.image.broker_configs) if cluster is not None else {}
            return describe_broker(config, keys, dynamic)
        if rtype == RESOURCE_GROUP:
            if not name:
                raise ConfigError(Errors.INVALID_REQUEST, "Group name must not be empty")
            cluster = self.apis.cluster
            stored = cluster.image.group_configs.get(name, {}) if cluster is not None else {}
            return describe_group(dict(stored), keys)
        raise ConfigError(Errors.INVALID_REQUEST, f"unsupported resource type {rtype}")

    def _topic_configs(self, name: str) -> dict[str, str] | None:
        if self.apis.cluster is not None:
            topic = self.apis.cluster.image.topics.get(name)
            return None if topic is None else dict(topic.configs)
        info = self.apis.topics.get(name)
        return None if info is None else dict(info.configs)

    # --- AlterConfigs / IncrementalAlterConfigs ---------------------------------------------

    def handle_alter_configs(self, request: Request) -> Any:
        return self._alter(request, incremental=False)

    def handle_incremental_alter_configs(self, request: Request) -> Any:
        return self._alter(request, incremental=True)

    def _alter(self, request: Request, incremental: bool) -> Any:
        body = request.body
        cluster = self.apis.cluster
        if cluster is not None:
            return cluster.forward_and_wait(body, lambda resp, image: self._configs_applied(
                body, resp, image, incremental))  # fmt: skip
        responses = []
        for res in body.resources:
            out = {"resource_type": res.resource_type, "resource_name": res.resource_name,
                   "error_code": Errors.NONE, "error_message": None}  # fmt: skip
            try:
                self._alter_single_node(res, incremental, bool(body.validate_only))
            except ConfigError as e:
                out.update(error_code=e.error_code, error_message=str(e))
            responses.append(out)
        return self.apis._respond(request, {"throttle_time": 0, "responses": responses})

    def _alter_single_node(self, res: Any, incremental: bool, validate_only: bool) -> None:
        if res.resource_type in (RESOURCE_BROKER, RESOURCE_GROUP):
            raise ConfigError(Errors.INVALID_REQUEST,
                              "dynamic broker and group configs need a controller (cluster "
                              "mode): a single-node broker keeps its configs static")
        if res.resource_type != RESOURCE_TOPIC:
            raise ConfigError(Errors.INVALID_REQUEST,
                              f"unsupported resource type {res.resource_type}")
        info = self.apis.topics.get(res.resource_name)
        if info is None:
            raise ConfigError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                              f"topic {res.resource_name!r} does not exist")  # fmt: skip
        changes = topic_changes(dict(info.configs), res.configs, incremental)
        if validate_only:
            return
        self.apis.topics.alter_configs(info.name, changes)
        self.apis._host_topic(info)  # re-reads min.insync.replicas for every partition

    @staticmethod
    def _configs_applied(body: Any, resp: Any, image: Any, incremental: bool) -> bool:
        """Every topic (and broker or group resource) the controller changed shows the
        requested values in our image."""
        ok = {(r.resource_type, r.resource_name) for r in resp.responses
              if r.error_code.value == Errors.NONE}
        if body.validate_only:
            return True
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
                if op == 0 and configs.get(c.name) != (c.value or "").strip():
                    return False
                if op == 1 and c.name in configs:
                    return False
        return True
