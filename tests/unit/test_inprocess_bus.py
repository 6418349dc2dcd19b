from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from kgrag_core.handlers.protocol import DeadLetter, HandlerResult, OutputEvent
from kgrag_core.ids import stable_partition
from kgrag_runtime.bus import InProcessBus


@dataclass
class Recorder:
    """A handler that records what it saw, forwards to `out.topic`, and rejects payloads marked bad."""

    name: str = "recorder"
    topics: tuple[str, ...] = ("in.topic",)
    seen: list[tuple[str, int]] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        result = HandlerResult()
        self.batch_sizes.append(len(batch))
        for key, payload in batch:
            if payload.get("bad"):
                result.dead_letters.append(DeadLetter(key, payload, "MALFORMED_EVENT", "marked bad"))
                continue
            self.seen.append((key, int(payload["n"])))  # type: ignore[call-overload]
            result.outputs.append(OutputEvent("out.topic", key, payload))
        return result


def test_events_of_one_key_are_handled_in_publish_order() -> None:
    bus = InProcessBus(partitions=4, batch_size=3)
    handler = Recorder()
    bus.subscribe("in.topic")
    for n in range(30):
        bus.publish("in.topic", f"doc-{n % 5}", {"n": n})
    report = bus.drain(handler)
    assert report.events == 30
    for key in {k for k, _ in handler.seen}:
        numbers = [n for k, n in handler.seen if k == key]
        assert numbers == sorted(numbers)
    assert max(handler.batch_sizes) <= 3


def test_poison_messages_go_to_the_dead_letter_topic_and_the_partition_moves_on() -> None:
    bus = InProcessBus(partitions=1, batch_size=10)
    handler = Recorder()
    bus.subscribe("in.topic")
    bus.publish("in.topic", "doc", {"n": 1})
    bus.publish("in.topic", "doc", {"bad": True})
    bus.publish("in.topic", "doc", {"n": 2})
    report = bus.drain(handler)
    assert handler.seen == [("doc", 1), ("doc", 2)]
    assert [d.reason for d in report.dead_letters] == ["marked bad"]
    assert len(bus.dead_letters["recorder.dlq"]) == 1


def test_outputs_are_published_and_unheard_topics_are_counted_not_kept() -> None:
    bus = InProcessBus(partitions=2)
    bus.subscribe("in.topic")
    bus.publish("in.topic", "a", {"n": 1})
    bus.drain(Recorder())
    assert bus.dropped == {"out.topic": 1}
    bus.subscribe("out.topic")
    bus.publish("in.topic", "a", {"n": 2})
    bus.drain(Recorder())
    assert bus.pending("out.topic") == 1


def test_keys_land_on_their_stable_partition() -> None:
    bus = InProcessBus(partitions=8)
    bus.subscribe("t")
    bus.publish("t", "doc-42", {})
    queues = bus._queues["t"]
    assert len(queues[stable_partition("doc-42", 8)]) == 1


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="positive"):
        InProcessBus(partitions=0)
