"""ReplicationBehaviour: fixed behaviour by default, typos rejected with the field named."""

from __future__ import annotations

import pytest

from broker_app.replication.behaviour import ReplicationBehaviour


def test_defaults_are_the_fixed_behaviour() -> None:
    b = ReplicationBehaviour()
    assert (b.truncation, b.isr_update, b.consumer_visibility) == (
        "diverging-epoch",
        "maximal",
        "high-watermark",
    )
    assert b.strict_min_isr is True and b.unclean_leader_election is False
    assert b.uses_last_fetched_epoch and not b.uses_offset_for_leader_epoch


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"truncation": "kip101"}, "truncation"),
        ({"isr_update": "lazy"}, "isr_update"),
        ({"consumer_visibility": "all"}, "consumer_visibility"),
        ({"strict_min_isr": "yes"}, "strict_min_isr"),
    ],
)
def test_bad_switch_values_name_the_field(kwargs, field) -> None:
    with pytest.raises(ValueError, match=f"ReplicationBehaviour.{field}"):
        ReplicationBehaviour(**kwargs)
