"""harness.checker.metadata_check: which nodes' metadata images differ at the end of a run,
from real /state-shaped answers built with MetadataImage (digest and to_json as the nodes
serve them)."""

from __future__ import annotations

import uuid

from broker_app.metadata import MetadataImage, PartitionChange, PartitionRecord, RegisterBroker
from broker_app.metadata.records import TopicRecord
from harness.checker.metadata_check import metadata_divergence

TID = str(uuid.UUID(int=7))


def image(isr: tuple[int, ...] = (1, 2)) -> MetadataImage:
    img = MetadataImage().apply_all([
        (0, RegisterBroker(1, 0, "a", "h", 1, fenced=False)),
        (1, RegisterBroker(2, 1, "b", "h", 2, fenced=False)),
        (2, TopicRecord("t", TID)),
        (3, PartitionRecord(TID, 0, (1, 2), (1, 2), 1)),
    ])
    if isr != (1, 2):
        img = img.apply(PartitionChange(TID, 0, isr=isr), 4)
    return img


def controller(img: MetadataImage, active: bool | None = None) -> dict:
    state = {"metadata_digest": img.digest(), "metadata_offset": img.offset,
             "image": img.to_json()}
    if active is not None:
        state["quorum"] = {"active": active}
    return state


def broker(img: MetadataImage) -> dict:
    return {"metadata_digest": img.digest(), "metadata_offset": img.offset}


def test_agreeing_images_count_nothing_whatever_offset_each_reached() -> None:
    img = image()
    loaded = MetadataImage(img.brokers, img.topics, offset=9)  # e.g. from a snapshot ending at 10
    result = metadata_divergence({"controller": controller(img), "broker-1": broker(loaded),
                                  "broker-2": broker(img)})
    assert result["count"] == 0 and result["examples"] == [] and result["unknown"] == []
    assert result["reference"]["node"] == "controller"


def test_a_broker_with_another_image_counts_and_a_silent_one_is_unknown() -> None:
    good, stale = image(), image(isr=(1,))
    result = metadata_divergence({"controller": controller(good), "broker-1": broker(stale),
                                  "broker-2": broker(good), "broker-3": None})
    assert result["count"] == 1
    assert result["examples"] == [["broker-1", 4, stale.digest()]]
    assert result["unknown"] == ["broker-3"]
    assert result["by_partition"] == {}  # a broker shows only its digest


def test_the_active_controller_is_the_reference_and_a_diverged_voter_names_partitions() -> None:
    good, diverged = image(), image(isr=(1,))
    answers = {"controller-3000": controller(diverged, active=False),
               "controller-3001": controller(diverged, active=False),
               "controller-3002": controller(good, active=True), "broker-1": broker(good)}
    result = metadata_divergence(answers)
    assert result["reference"] == {"node": "controller-3002", "digest": good.digest()}
    assert result["count"] == 2 and result["by_partition"] == {"t-0": 2}
    # Without an active one, the digest most controllers hold is the reference.
    for state in answers.values():
        state.pop("quorum", None)
    result = metadata_divergence(answers)
    assert result["reference"]["digest"] == diverged.digest() and result["count"] == 2
