"""`--set key=value` overrides, applied to the plan's node tree before it is validated.

Dotted paths, list items by index (`faults.0.at=3`), free-form maps taking the rest of the path as
one key (`cluster.switches.truncation=hw`,
`cluster.topics.0.configs.unclean.leader.election.enable=true`). The value is parsed as YAML. A
key the plan does not have is added; whether it is allowed is the schema's call (the builder
reports the unknown key with the override as origin).
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.plan.errors import PlanError
from harness.plan.yamlnodes import describe, join, walk

# Free-form maps: an override path reaching one of these takes its remainder as one key.
FREEFORM = {("cluster", "switches"), ("cluster", "topics", "*", "configs")}


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`["a.b=1", ...]` from `--set` into {"a.b": "1"}; raises PlanError on a missing '='."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PlanError("--set", None, "", f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out


def apply_override(root: Node, key: str, value: str, source: str) -> Node:
    """`root` with the value at dotted `key` replaced (or added) by `value` parsed as
    YAML; its nodes carry the override as their mark, for error messages."""
    mark = Mark(f"--set {key}={value}", 0, -1, 0, None, None)
    try:
        new = yaml.compose(value, Loader=yaml.SafeLoader) if value.strip() else None
    except yaml.YAMLError as e:
        raise PlanError(source, None, key, f"value is not valid YAML: {e}",
                        origin=mark.name) from e
    if new is None:
        new = ScalarNode("tag:yaml.org,2002:str", value)
    for n in walk(new):
        n.start_mark = n.end_mark = mark
    segments = key.split(".")
    if not key or any(s == "" for s in segments):
        raise PlanError(source, None, key, "empty segment in path", origin=mark.name)
    node, path, shape = root, "", []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if tuple(shape) in FREEFORM:
            seg, last = ".".join(segments[i:]), True
        if isinstance(node, SequenceNode):
            if not seg.isdigit() or int(seg) >= len(node.value):
                raise PlanError(source, None, path, f"no item {seg!r}: the list has "
                                f"{len(node.value)} item(s), 0-based", origin=mark.name)
            if last:
                node.value[int(seg)] = new
                return root
            node, path = node.value[int(seg)], join(path, int(seg))
            shape.append("*")
            continue
        if not isinstance(node, MappingNode):
            raise PlanError(source, None, path or key,
                            f"is {describe(node)}, has no key {seg!r}", origin=mark.name)
        for j, (k, v) in enumerate(node.value):
            if isinstance(k, ScalarNode) and k.value == seg:
                if last:
                    node.value[j] = (k, new)
                    return root
                node = v
                break
        else:
            # A new key: whether it is allowed is the schema's call (it reports the
            # unknown key with this override as origin).
            child = new if last else MappingNode("tag:yaml.org,2002:map", [])
            k = ScalarNode("tag:yaml.org,2002:str", seg)
            k.start_mark = k.end_mark = child.start_mark = child.end_mark = mark
            node.value.append((k, child))
            if last:
                return root
            node = child
        path = join(path, seg)
        shape.append(seg)
    return root
