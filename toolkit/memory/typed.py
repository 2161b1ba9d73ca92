"""Typed memories (SPEC §2): importance, decay and type-specific fields, validated (pure)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from toolkit.memory.arguments import ArgumentError

MEMORY_TYPES = ("episodic", "semantic", "procedural", "strategic")
MAX_ATTRIBUTES_JSON = 10_000


@dataclass(frozen=True)
class TypedFields:
    """Validated typed-memory fields ready to store."""

    memory_type: str = "semantic"
    importance: float = 0.5
    decay_rate: float = 0.01
    attributes: dict[str, Any] = field(default_factory=dict)


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ArgumentError(f"{name} must be a number from {low} to {high}")
    if not low <= value <= high:
        raise ArgumentError(f"{name} must be from {low} to {high}, got {value}")
    return float(value)


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArgumentError(f"{name} must be a whole number of 0 or more")
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ArgumentError(f"{name} must be a string")
    return value


def _strings(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ArgumentError(f"{name} must be a list of strings")
    return list(value)


def _json(value: Any, name: str) -> Any:
    return value


def _time(value: Any, name: str) -> str:
    try:
        moment = datetime.fromisoformat(_text(value, name))
    except ValueError as exc:
        raise ArgumentError(f"{name} must be an ISO 8601 date-time") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


def _unit(name: str) -> Callable[[Any, str], float]:
    return lambda value, key: _number(value, key, 0.0, 1.0)


Check = Callable[[Any, str], Any]

FIELDS: Mapping[str, Mapping[str, Check]] = {
    "episodic": {
        "action_taken": _text,
        "context": _json,
        "result": _json,
        "emotional_valence": lambda v, k: _number(v, k, -1.0, 1.0),
        "event_time": _time,
        "verification_status": _text,
    },
    "semantic": {
        "confidence": _unit("confidence"),
        "category": _strings,
        "related_concepts": _strings,
        "source_references": _json,
        "contradictions": _json,
    },
    "procedural": {
        "steps": _json,
        "prerequisites": _json,
        "success_count": _count,
        "total_attempts": _count,
        "failure_points": _json,
    },
    "strategic": {
        "pattern_description": _text,
        "confidence_score": _unit("confidence_score"),
        "supporting_evidence": _json,
        "success_metrics": _json,
        "adaptation_history": _json,
        "context_applicability": _json,
    },
}
"""Allowed metadata keys per type and how each is checked."""

DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "episodic": {"emotional_valence": 0.0},
    "semantic": {"confidence": 0.8, "category": [], "related_concepts": []},
    "procedural": {"success_count": 0, "total_attempts": 0},
    "strategic": {"confidence_score": 0.7},
}


def parse_typed(
    memory_type: Any, importance: Any, metadata: Any, *, content: str, now: datetime
) -> TypedFields:
    """Validate the typed-memory arguments of ``create_memory``.

    Raises:
        ArgumentError: with a reason naming the field and what it accepts.
    """
    if memory_type not in MEMORY_TYPES:
        raise ArgumentError(f"type must be one of {', '.join(MEMORY_TYPES)}")
    weight = 0.5 if importance is None else _number(importance, "importance", 0.0, 1.0)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise ArgumentError("metadata must be an object of type-specific fields")
    metadata = dict(metadata)
    decay = metadata.pop("decay_rate", metadata.pop("decayRate", 0.01))
    decay_rate = _number(decay, "decay_rate", 0.0, 10.0)
    allowed = FIELDS[memory_type]
    unknown = sorted(set(metadata) - set(allowed))
    if unknown:
        raise ArgumentError(
            f"metadata for a {memory_type} memory accepts {', '.join(allowed)}; "
            f"not {', '.join(unknown)}"
        )
    attributes = dict(DEFAULTS[memory_type])
    attributes.update({key: allowed[key](value, key) for key, value in metadata.items()})
    _complete(memory_type, attributes, content=content, now=now)
    if len(json.dumps(attributes, default=str)) > MAX_ATTRIBUTES_JSON:
        raise ArgumentError(f"metadata is larger than {MAX_ATTRIBUTES_JSON} characters of JSON")
    return TypedFields(memory_type, weight, decay_rate, attributes)


def _complete(memory_type: str, attributes: dict[str, Any], *, content: str, now: datetime) -> None:
    """Type rules across fields, and derived values."""
    if memory_type == "episodic":
        attributes.setdefault("event_time", now.isoformat())
    elif memory_type == "procedural":
        if attributes.get("steps") in (None, [], {}, ""):
            raise ArgumentError("a procedural memory needs metadata.steps (the steps to follow)")
        if attributes["success_count"] > attributes["total_attempts"]:
            raise ArgumentError("success_count cannot exceed total_attempts")
        total = attributes["total_attempts"]
        attributes["success_rate"] = attributes["success_count"] / total if total else None
    elif memory_type == "strategic":
        attributes.setdefault("pattern_description", content)
