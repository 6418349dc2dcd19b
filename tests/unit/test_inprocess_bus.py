import threading
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


@dataclass(frozen=True)
class _Staged:
    keys: frozenset[str]
    batch: tuple[tuple[str, Mapping[str, object]], ...]


@dataclass
class StagingRecorder:
    """A staged handler (stage on any thread, finish on the draining one) that logs its phases."""

    name: str = "stager"
    topics: tuple[str, ...] = ("in.topic",)
    log: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)
    written: list[tuple[str, int]] = field(default_factory=list)
    fail_on: str | None = None

    def conflict_keys(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> frozenset[str] | None:
        return frozenset(k for k, _ in batch)

    def stage(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> _Staged:
        staged = _Staged(frozenset(k for k, _ in batch), tuple(batch))
        self.log.append(("stage", threading.current_thread().name, staged.keys))
        return staged

    def finish(self, staged: _Staged) -> HandlerResult:
        self.log.append(("finish", threading.current_thread().name, staged.keys))
        if self.fail_on is not None and self.fail_on in staged.keys:
            raise ConnectionError("the index went away")
        self.written.extend((k, int(p["n"])) for k, p in staged.batch)  # type: ignore[call-overload]
        return HandlerResult(outputs=[OutputEvent("out.topic", k, p) for k, p in staged.batch])

    def handle(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> HandlerResult:
        return self.finish(self.stage(topic, batch))


def test_a_staging_handler_runs_one_batch_deep_with_every_write_on_the_draining_thread() -> None:
    bus = InProcessBus(partitions=1, batch_size=2)
    handler = StagingRecorder()
    bus.subscribe("in.topic")
    bus.subscribe("out.topic")
    keys = ["a", "b", "c", "d", "d", "e", "f", "g"]  # "d" opens the batch after its first event's
    for n, key in enumerate(keys):
        bus.publish("in.topic", key, {"n": n})
    report = bus.drain(handler)
    assert handler.written == [(k, n) for n, k in enumerate(keys)]
    assert report.events == len(keys) and bus.pending("out.topic") == len(keys)
    me = threading.current_thread().name
    assert {t for phase, t, _ in handler.log if phase == "finish"} == {me}
    # Some batch was staged on the helper thread (the overlap), and never one sharing a document with a
    # batch not yet written: {"d", "e"} only after {"c", "d"} finished.
    assert any(t != me for phase, t, _ in handler.log if phase == "stage")
    order = [(phase, keys) for phase, _, keys in handler.log]
    assert order.index(("finish", frozenset("cd"))) < order.index(("stage", frozenset("de")))


def test_a_failed_write_puts_the_batch_staged_ahead_back_and_nothing_after_it_is_written() -> None:
    bus = InProcessBus(partitions=1, batch_size=2)
    handler = StagingRecorder(fail_on="c")
    bus.subscribe("in.topic")
    for n, key in enumerate(["a", "b", "c", "d", "e", "f"]):
        bus.publish("in.topic", key, {"n": n})
    with pytest.raises(ConnectionError):
        bus.drain(handler)
    assert handler.written == [("a", 0), ("b", 1)]
    # The batch staged beside the failed write was not consumed: it is back, ahead of the rest.
    assert bus.pending("in.topic") == 2
    handler.fail_on = None
    bus.drain(handler)
    assert handler.written == [("a", 0), ("b", 1), ("e", 4), ("f", 5)]  # the failed batch was taken, as serially
