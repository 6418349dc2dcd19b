"""Event encoding and schema validation on both sides of Kafka.

Every event is validated against its topic's versioned model before it is produced and again when it
is consumed, so a bad producer cannot poison a consumer silently: the consumer dead-letters it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import ValidationError

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.schema_export import EVENTS as TOPIC_MODELS


def dead_letter_topic(consumer: str) -> str:
    return f"{consumer}.dlq"


def encode(topic: str, payload: Mapping[str, object]) -> bytes:
    """Validate against the topic's schema and serialise; raises MALFORMED_EVENT on a bad payload."""
    model = TOPIC_MODELS.get(topic)
    if model is not None:
        try:
            model.model_validate(payload)
        except ValidationError as err:
            raise KgragError(
                ErrorCode.MALFORMED_EVENT, f"refusing to produce an invalid {topic} event: {err.errors()[0]['msg']}"
            ) from err
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")


def decode(value: bytes | None) -> dict[str, object]:
    """Parse a message value; the handler validates the fields against the model it expects."""
    if value is None:
        raise KgragError(ErrorCode.MALFORMED_EVENT, "the message has no value")
    try:
        payload = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise KgragError(ErrorCode.MALFORMED_JSON, f"the message value is not JSON: {err}") from err
    if not isinstance(payload, dict):
        raise KgragError(ErrorCode.MALFORMED_EVENT, "the message value is not a JSON object")
    return payload
