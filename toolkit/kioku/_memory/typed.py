"""Typed memories (SPEC §2): importance, decay and type-specific fields, validated (pure)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kioku._memory.arguments import (
    MAX_SAFE_INTEGER,
    ArgumentError,
    check_text,
    parse_time,
    reject_unknown,
)
from kioku._memory.text import echo

MEMORY_TYPES = ("episodic", "semantic", "procedural", "strategic")
MAX_ATTRIBUTES_JSON = 10_000
"""Characters of the stored metadata as JSON."""
MAX_METADATA_DEPTH = 8
"""Levels of lists and objects inside ``metadata`` (``metadata`` itself is the first)."""
MAX_METADATA_VALUES = 1_000
"""Values and keys in ``metadata``, counted at every level."""
MAX_KEY_ECHO = 30
"""Characters of a key shown in the path a reason names."""


@dataclass(frozen=True)
class TypedFields:
    """Validated typed-memory fields ready to store."""

    memory_type: str = "semantic"
    importance: float = 0.5
    decay_rate: float = 0.01
    attributes: dict[str, Any] = field(default_factory=dict)


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(f"{name} must be a number from {low} to {high}")
    if not (math.isfinite(value) if isinstance(value, float) else abs(value) <= MAX_SAFE_INTEGER):
        raise ArgumentError(f"{name} must be a finite number from {low} to {high}")
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


def _flag(value: Any, name: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ArgumentError(f"{name} must be true, false or null")
    return value


def _time(value: Any, name: str) -> str:
    return parse_time(value, name).isoformat()


def _unit(name: str) -> Callable[[Any, str], float]:
    return lambda value, key: _number(value, key, 0.0, 1.0)


Check = Callable[[Any, str], Any]
_NULLABLE: tuple[Check, ...] = (_json, _flag)
"""Checks of fields whose null is kept as null (the others' null means their default)."""

FIELDS: Mapping[str, Mapping[str, Check]] = {
    "episodic": {
        "action_taken": _json,
        "context": _json,
        "result": _json,
        "emotional_valence": lambda v, k: _number(v, k, -1.0, 1.0),
        "event_time": _time,
        "verification_status": _flag,
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


def check_json(field: str, value: Any) -> Any:
    """``value`` unchanged if PostgreSQL can store it as ``jsonb`` within the limits.

    The one rule for model-supplied JSON: strings, finite numbers (whole ones within
    ±2^53-1), booleans, null, lists and objects with string keys; strings and keys
    storable (:func:`check_text`), at most :data:`MAX_METADATA_DEPTH` levels and
    :data:`MAX_METADATA_VALUES` values. Walked without recursion, and stops at the first
    fault, so a huge or deep value costs little.

    Raises:
        ArgumentError: naming the path of the fault (``metadata.result[2]``).
    """
    pending: list[tuple[str, Any, int]] = [(field, value, 1)]
    seen = 0
    while pending:
        path, node, depth = pending.pop()
        seen += 1
        if seen > MAX_METADATA_VALUES:
            raise ArgumentError(f"{field} holds more than {MAX_METADATA_VALUES} values and keys")
        if isinstance(node, list | dict) and depth > MAX_METADATA_DEPTH:
            raise ArgumentError(f"{field} is nested more than {MAX_METADATA_DEPTH} levels deep")
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    raise ArgumentError(f"{path} has a key that is not a string")
                check_text(f"a key of {path}", key, MAX_ATTRIBUTES_JSON)
                pending.append((f"{path}.{echo(key, MAX_KEY_ECHO)}", child, depth + 1))
        elif isinstance(node, list):
            pending.extend((f"{path}[{i}]", child, depth + 1) for i, child in enumerate(node))
        else:
            _check_scalar(path, node)
    return value


def _check_scalar(path: str, node: Any) -> None:
    if node is None or isinstance(node, bool):
        return
    if isinstance(node, str):
        check_text(path, node, MAX_ATTRIBUTES_JSON)
    elif isinstance(node, float):
        if not math.isfinite(node):
            raise ArgumentError(f"{path} is {node}; JSON numbers must be finite")
    elif isinstance(node, int):
        if abs(node) > MAX_SAFE_INTEGER:
            raise ArgumentError(f"{path} is a whole number beyond ±{MAX_SAFE_INTEGER}")
    else:
        raise ArgumentError(f"{path} must be a string, number, boolean, null, list or object")


def parse_typed(
    memory_type: Any, importance: Any, metadata: Any, *, content: str, now: datetime
) -> TypedFields:
    """Validate the typed-memory arguments of ``create_memory``.

    Raises:
        ArgumentError: with a reason naming the field and what it accepts.
    """
    if memory_type not in MEMORY_TYPES:
        raise ArgumentError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
    weight = 0.5 if importance is None else _number(importance, "importance", 0.0, 1.0)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise ArgumentError("metadata must be an object of type-specific fields")
    metadata = dict(check_json("metadata", metadata))
    snake, camel = metadata.pop("decay_rate", None), metadata.pop("decayRate", None)
    decay = snake if snake is not None else camel
    decay_rate = 0.01 if decay is None else _number(decay, "decay_rate", 0.0, 10.0)
    allowed = FIELDS[memory_type]
    article = "an" if memory_type[0] in "aeiou" else "a"
    reject_unknown(metadata, allowed, what=f"metadata field(s) for {article} {memory_type} memory:")
    # As the reference reads them: null for a field with a default is the default.
    metadata = {
        key: value
        for key, value in metadata.items()
        if value is not None or allowed[key] in _NULLABLE
    }
    attributes = dict(DEFAULTS[memory_type])
    attributes.update({key: allowed[key](value, key) for key, value in metadata.items()})
    _complete(memory_type, attributes, content=content, now=now)
    if len(json.dumps(attributes, default=str, ensure_ascii=False)) > MAX_ATTRIBUTES_JSON:
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
