"""The pure rules of the LangGraph store: namespaces, their scopes, and an item's text."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import InvalidNamespaceError, get_text_at_path

from kioku._context import GLOBAL_LINEAGE
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ConfigurationError, one_line
from kioku._memory.text import unstorable

Namespace = tuple[str, ...]
ScopeRule = Callable[[Namespace], ServerScope | PersonalScope]
"""Which kioku scope an item of a namespace is saved in."""

DEFAULT_SERVER = "langgraph"
"""The server key of server-wide items under the default rule."""
WHOLE_VALUE = "$"
"""The index field naming the whole value (LangGraph's default)."""


def namespace_rule(*, server_id: str = DEFAULT_SERVER, user_label: int | None = None) -> ScopeRule:
    """The documented default rule: personal when a user label is named, else server-wide.

    Args:
        server_id: the server key of server-wide items.
        user_label: the position of the label holding the user id (LangMem's
            ``("memories", "{langgraph_user_id}")`` is ``1``); a namespace with a label
            there is that user's, any other is server-wide.

    Returns:
        A rule giving :class:`PersonalScope` or :class:`ServerScope`, both of lineage 0
        (global: every persona's personal reads include it).
    """
    if not server_id:
        raise ConfigurationError("server_id must be a non-empty server key")
    if user_label is not None and user_label < 0:
        raise ConfigurationError(f"user_label must be a position from 0, not {user_label}")

    def scope_of(namespace: Namespace) -> ServerScope | PersonalScope:
        if user_label is not None and user_label < len(namespace):
            return PersonalScope(namespace[user_label], GLOBAL_LINEAGE)
        return ServerScope(server_id, GLOBAL_LINEAGE)

    return scope_of


def checked_scope(rule: ScopeRule, namespace: Namespace) -> ServerScope | PersonalScope:
    """``rule``'s scope for ``namespace``, refused unless it is a kioku scope.

    Raises:
        ConfigurationError: the rule returned something else, or an empty owner.
    """
    scope = rule(namespace)
    if not isinstance(scope, ServerScope | PersonalScope):
        raise ConfigurationError(
            f"the scope rule returned {type(scope).__name__} for {namespace!r}; "
            "return kioku.ServerScope or kioku.PersonalScope"
        )
    if not scope.owner_id:
        raise ConfigurationError(f"the scope rule gave {namespace!r} an empty owner id")
    return scope


def check_namespace(namespace: Sequence[str], *, exact: bool) -> Namespace:
    """``namespace`` as a tuple, or LangGraph's error for a label it refuses.

    Args:
        namespace: an item's namespace (``exact``) or a prefix (may be empty).
        exact: an item's namespace: not empty. (The root label ``"langgraph"`` is refused
            by ``BaseStore.put`` alone, as in LangGraph: a ``PutOp`` may use it.)

    Raises:
        InvalidNamespaceError: an empty namespace, or a label that is empty, not a string,
            or holds a period or a NUL character.
    """
    labels = tuple(namespace)
    if exact and not labels:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in labels:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Namespace labels must be strings, got {type(label).__name__} in {labels!r}"
            )
        if not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {labels!r}: labels must be non-empty "
                "and hold no period or NUL character"
            )
    return labels


@dataclass(frozen=True)
class IndexFields:
    """Which parts of a value are an item's searchable text (the store's ``index``)."""

    fields: tuple[str, ...] = (WHOLE_VALUE,)

    @classmethod
    def of(cls, index: Mapping[str, Any] | None, dimension: int) -> IndexFields:
        """The fields of a LangGraph ``index`` config (kioku embeds with its own embedder).

        Raises:
            ConfigurationError: ``embed`` given, ``dims`` other than the embedder's, an
                unknown key, or no fields.
        """
        config = dict(index or {})
        unknown = set(config) - {"fields", "dims", "embed"}
        if unknown:
            raise ConfigurationError(f"unknown index option(s): {', '.join(sorted(unknown))}")
        if config.get("embed") is not None:
            raise ConfigurationError(
                "index 'embed' is not used: kioku embeds with the store's embedder "
                "(KIOKU_EMBEDDINGS); pass only 'fields'"
            )
        dims = config.get("dims")
        if dims is not None and dims != dimension:
            raise ConfigurationError(
                f"index dims={dims} differs from the store's embedder ({dimension} dimensions)"
            )
        fields = config.get("fields")
        return cls(check_fields(fields) if fields is not None else (WHOLE_VALUE,))


def check_fields(fields: Sequence[str]) -> tuple[str, ...]:
    """``fields`` as a tuple of non-empty paths.

    Raises:
        ConfigurationError: a field is not a non-empty string, or there are none.
    """
    if isinstance(fields, str) or not fields:
        raise ConfigurationError("index fields must be a non-empty list of paths")
    for field in fields:
        if not isinstance(field, str) or not field:
            raise ConfigurationError(f"index field {field!r} is not a path")
    return tuple(fields)


def item_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    """The searchable text of ``value``: the text at each field, one per line.

    The whole value (``"$"``) is its JSON with sorted keys, as LangGraph embeds it; a value
    with nothing at any field is searched as its whole JSON, so every memory has text.
    """
    texts = [text for field in fields for text in get_text_at_path(value, field)]
    texts = [text for text in texts if text.strip()]
    if not texts:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return "\n".join(texts)


def check_value(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object (a dict with string keys).

    Raises:
        ConfigurationError: another type, or a value JSON cannot hold.
    """
    if not isinstance(value, dict):
        raise ConfigurationError(f"store values are dicts, got {type(value).__name__}")
    try:
        dumped = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the value is not JSON: {one_line(exc)}") from exc
    problem = unstorable(dumped) or ("a NUL character" if "\\u0000" in dumped else None)
    if problem is not None:
        raise ConfigurationError(f"the value holds {problem}, which PostgreSQL cannot store")
    return value


def check_key(key: object) -> str:
    """``key`` when it is a string PostgreSQL can store.

    Raises:
        ConfigurationError: not a string, or holding a NUL or a lone surrogate.
    """
    if not isinstance(key, str):
        raise ConfigurationError(f"store keys are strings, got {type(key).__name__}")
    problem = unstorable(key)
    if problem is not None:
        raise ConfigurationError(f"the key holds {problem}, which PostgreSQL cannot store")
    return key
