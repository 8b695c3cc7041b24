"""KIP-848 group configs (server/configs.py): Kafka's GroupConfig names and bounds, and what
DescribeConfigs shows. The
wire path with a real client is tests/integration/cluster/test_rdkafka_suite_findings.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from broker_app.controller.topic_admin_apis import _alter_group
from broker_app.server.configs import (
    OP_SET,
    SOURCE_DEFAULT,
    SOURCE_GROUP,
    ConfigError,
    Errors,
    describe_group,
    topic_changes,
)


def _set(*pairs: tuple[str, str]) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=n, value=v, config_operation=OP_SET) for n, v in pairs]


def test_names_and_bounds_follow_group_config() -> None:
    assert topic_changes({}, _set(("consumer.session.timeout.ms", "60000")), True,
                         kind="group") == {"consumer.session.timeout.ms": "60000"}  # fmt: skip
    for name, value in (("consumer.session.timeout.ms", "60001"),
                        ("consumer.heartbeat.interval.ms", "4999"),
                        ("share.record.lock.duration.ms", "1000"),
                        ("streams.num.standby.replicas", "3")):
        with pytest.raises(ConfigError, match=f"Invalid value '{value}' for configuration "
                                              f"{name}") as e:  # fmt: skip
            topic_changes({}, _set((name, value)), True, kind="group")
        assert e.value.error_code == Errors.INVALID_CONFIG
    with pytest.raises(ConfigError, match="Unknown group config name: min.insync.replicas"):
        topic_changes({}, _set(("min.insync.replicas", "2")), False, kind="group")


def test_describe_shows_set_values_as_group_config_and_the_rest_as_default() -> None:
    entries = {e["name"]: e for e in describe_group({"consumer.session.timeout.ms": "50000"},
                                                     None)}  # fmt: skip
    assert entries["consumer.session.timeout.ms"]["value"] == "50000"
    assert entries["consumer.session.timeout.ms"]["config_source"] == SOURCE_GROUP
    assert entries["consumer.heartbeat.interval.ms"]["config_source"] == SOURCE_DEFAULT
    assert [e["name"] for e in describe_group({}, ["share.auto.offset.reset", "nope"])] == [
        "share.auto.offset.reset"]


def test_the_default_group_resource_is_refused() -> None:
    res = SimpleNamespace(resource_name="", configs=_set(("consumer.session.timeout.ms",
                                                          "50000")))  # fmt: skip
    with pytest.raises(ConfigError, match="Default group resources are not allowed") as e:
        _alter_group(None, res, True, False, 0)  # type: ignore[arg-type]
    assert e.value.error_code == Errors.INVALID_REQUEST
