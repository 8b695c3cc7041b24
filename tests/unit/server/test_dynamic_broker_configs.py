"""KIP-226 dynamic broker configs (server/configs.py): which names may change, the errors that
name the rest, and DescribeConfigs' source for each level (per broker, cluster default,
static). That brokers honour them is the compat table's `dynamic broker configs` row."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from broker_app.config import BrokerConfig
from broker_app.server.configs import (
    OP_DELETE,
    OP_SET,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    ConfigError,
    describe_broker,
    topic_changes,
)


def _entries(*pairs: tuple[str, str | None], op: int | None = None) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=n, value=v, config_operation=op) for n, v in pairs]


def test_only_dynamic_names_change_and_the_others_are_named() -> None:
    changes = topic_changes({}, _entries(("min.insync.replicas", "2")), False, kind="broker")
    assert changes == {"min.insync.replicas": "2"}
    # AlterConfigs replaces the resource's dynamic configs: what it leaves out is deleted
    assert topic_changes({"min.insync.replicas": "2"}, None, False, kind="broker") == {
        "min.insync.replicas": None}
    inc = topic_changes({"min.insync.replicas": "2"},
                        _entries(("min.insync.replicas", None), op=OP_DELETE), True, "broker")
    assert inc == {"min.insync.replicas": None}
    with pytest.raises(ConfigError, match="Unknown broker config name: no.such"):
        topic_changes({}, _entries(("no.such", "1"), op=OP_SET), True, kind="broker")
    with pytest.raises(ConfigError, match=r"Cannot update these configs dynamically: "
                                          r"\[log.dirs\]"):
        topic_changes({}, _entries(("log.dirs", "/x")), False, kind="broker")
    with pytest.raises(ConfigError, match="Invalid value '0' for configuration "
                                          "min.insync.replicas"):
        topic_changes({}, _entries(("min.insync.replicas", "0")), False, kind="broker")


def test_describe_shows_each_level_with_its_source(tmp_path: Path) -> None:
    config = BrokerConfig(node_id=2, data_dir=tmp_path, port=9092, min_insync_replicas=1)

    def entry(dynamic: dict) -> tuple[str, int, bool]:
        [e] = describe_broker(config, ["min.insync.replicas"], dynamic)
        return e["value"], e["config_source"], e["read_only"]

    assert entry({}) == ("1", SOURCE_STATIC_BROKER, False)
    assert entry({"": {"min.insync.replicas": "2"}}) == ("2", SOURCE_DYNAMIC_DEFAULT_BROKER, False)
    assert entry({"": {"min.insync.replicas": "2"}, "2": {"min.insync.replicas": "3"},
                  "1": {"min.insync.replicas": "9"}}) == ("3", SOURCE_DYNAMIC_BROKER, False)
    [ro] = describe_broker(config, ["log.dirs"], {})
    assert ro["read_only"] and ro["config_source"] == SOURCE_STATIC_BROKER
