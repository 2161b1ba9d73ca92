"""The JSON schema a model sees of a tool's arguments, derived from their pydantic model."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel

NULL = {"type": "null"}
ORDER = {"type": 0, "description": 2}


def model_facing_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as tools advertise it: argument names, types, constraints.

    Pydantic's own schema is trimmed to what the model needs and every provider accepts:
    no generated titles, an optional argument as its type (not ``anyOf`` with ``null``:
    null is accepted as omitted anyway), no ``default: null``, no ``additionalProperties``
    (unknown names are refused with a reason instead).
    """
    return copy.deepcopy(_schema_of(model))


@cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    properties = {name: _trimmed(value) for name, value in schema["properties"].items()}
    shown: dict[str, Any] = {"title": schema["title"], "type": "object"}
    shown["properties"] = properties
    if schema.get("required"):
        shown["required"] = list(schema["required"])
    return shown


def _trimmed(node: Any) -> Any:
    if isinstance(node, list):
        return [_trimmed(item) for item in node]
    if not isinstance(node, dict):
        return node
    options = node.get("anyOf")
    if isinstance(options, list) and NULL in options and len(options) == 2:
        [kept] = [option for option in options if option != NULL]
        node = {**{k: v for k, v in node.items() if k != "anyOf"}, **kept}
    kept = {
        key: _trimmed(value)
        for key, value in node.items()
        if key != "title"
        and not (key == "default" and value is None)
        and not (key == "additionalProperties" and value is True)
    }
    # As hand-written schemas read: the type first, the description last.
    return dict(sorted(kept.items(), key=lambda item: ORDER.get(item[0], 1)))
