"""The pure rules of the LangGraph store: namespaces, their scopes, and an item's text."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import InvalidNamespaceError, get_text_at_path

from kioku._context import GLOBAL_LINEAGE, server_key
from kioku._domain.scopes import PersonalScope, ServerScope
from kioku._errors import ConfigurationError, ItemRefusedError, one_line
from kioku._memory.text import ContentFault, check_content, unstorable

Namespace = tuple[str, ...]
ScopeRule = Callable[[Namespace], ServerScope | PersonalScope]
"""Which kioku scope an item of a namespace is saved in."""

DEFAULT_SERVER = "langgraph"
"""The server id of server-wide items under the default rule."""
WHOLE_VALUE = "$"
"""The index field naming the whole value (LangGraph's default)."""
MAX_ADDRESS_BYTES = 2000
"""The most UTF-8 bytes of a namespace's labels and a key together: their primary-key
entry must fit PostgreSQL's btree row limit (2,704 bytes, labels' overhead included)."""
MAX_LABELS = 32
"""The most labels of a namespace (each adds to the primary-key entry)."""
NOT_INDEXED = "LangGraph store item without indexed text (value sha256:{})"
"""The memory text of an item with no indexed text: never shown to a model (its memory is
archived), it changes with the value, so the memory's history logs every change."""


def namespace_rule(*, server_id: str = DEFAULT_SERVER, user_label: int | None) -> ScopeRule:
    """The documented default rule: personal when a user label is named, else server-wide.

    Args:
        server_id: the server id of server-wide items (stored under kioku's
            :func:`~kioku._context.server_key`, as ``erase_server(server_id)`` finds it).
        user_label: the position of the label holding the user id (LangMem's
            ``("memories", "{langgraph_user_id}")`` is ``1``); a namespace with a label
            there is that user's, any other is server-wide. ``None``: all server-wide.

    Returns:
        A rule giving :class:`PersonalScope` or :class:`ServerScope`, both of lineage 0
        (global: every persona's personal reads include it).

    Raises:
        ConfigurationError: ``server_id`` not a non-empty string, or ``user_label`` not a
            position (an ``int`` from 0) or ``None``.
    """
    if not isinstance(server_id, str) or not server_id or unstorable(server_id):
        raise ConfigurationError(f"server_id must be a non-empty string, not {server_id!r}")
    if user_label is not None and (
        not isinstance(user_label, int) or isinstance(user_label, bool) or user_label < 0
    ):
        raise ConfigurationError(
            f"user_label must be a label position (an int from 0) or None, not {user_label!r}"
        )

    def scope_of(namespace: Namespace) -> ServerScope | PersonalScope:
        if user_label is not None and user_label < len(namespace):
            return PersonalScope(namespace[user_label], GLOBAL_LINEAGE)
        return ServerScope(server_id, GLOBAL_LINEAGE)

    return scope_of


def checked_scope(rule: ScopeRule, namespace: Namespace) -> ServerScope | PersonalScope:
    """``rule``'s scope for ``namespace`` as stored: a server's id becomes its server key.

    Raises:
        ConfigurationError: the rule failed, returned something else, an owner that is
            not a non-empty string, or a lineage that is not an ``int`` from 0.
    """
    try:
        scope = rule(namespace)
    except ConfigurationError:
        raise
    except Exception as exc:
        raise ConfigurationError(
            f"the scope rule failed for {namespace!r}: {type(exc).__name__}: {one_line(exc)}"
        ) from exc
    if not isinstance(scope, ServerScope | PersonalScope):
        raise ConfigurationError(
            f"the scope rule returned {type(scope).__name__} for {namespace!r}; "
            "return kioku.ServerScope or kioku.PersonalScope"
        )
    owner, lineage = scope.owner_id, scope.lineage_id
    if not isinstance(owner, str) or not owner or unstorable(owner):
        raise ConfigurationError(
            f"the scope rule gave {namespace!r} the owner {owner!r}; owners are non-empty strings"
        )
    if not isinstance(lineage, int) or isinstance(lineage, bool) or lineage < GLOBAL_LINEAGE:
        raise ConfigurationError(
            f"the scope rule gave {namespace!r} the lineage {lineage!r}; use an int from 0"
        )
    if isinstance(scope, ServerScope):
        return ServerScope(server_key(owner), lineage)
    return scope


def check_namespace(namespace: object, *, exact: bool) -> Namespace:
    """``namespace`` as a tuple, or LangGraph's error for a label it refuses.

    Args:
        namespace: an item's namespace (``exact``) or a prefix (may be empty).
        exact: an item's namespace: not empty. (The root label ``"langgraph"`` is refused
            by ``BaseStore.put`` alone, as in LangGraph: a ``PutOp`` may use it.)

    Raises:
        InvalidNamespaceError: a string or an empty namespace, too many labels or bytes,
            or a label that is empty, not a string, or holds a period, a NUL character or
            a lone surrogate.
    """
    if isinstance(namespace, str) or not isinstance(namespace, Sequence):
        raise InvalidNamespaceError(
            f"A namespace is a tuple of labels, not {namespace!r}: write ({namespace!r},)"
        )
    labels = tuple(namespace)
    if exact and not labels:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in labels:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Namespace labels must be strings, got {type(label).__name__} in {labels!r}"
            )
        if not label or "." in label or unstorable(label):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r}: labels must be non-empty and hold no "
                "period, NUL character or lone surrogate"
            )
    size = sum(len(label.encode()) for label in labels)
    if len(labels) > MAX_LABELS or size > MAX_ADDRESS_BYTES:
        raise InvalidNamespaceError(
            f"The namespace has {len(labels)} labels and {size} bytes; at most {MAX_LABELS} "
            f"labels and {MAX_ADDRESS_BYTES} bytes (UTF-8) are kept"
        )
    return labels


def check_key(key: object, namespace: Namespace = ()) -> str:
    """``key`` when it is a string PostgreSQL can store, and short enough with its namespace.

    Raises:
        ItemRefusedError: not a string, holding a NUL or a lone surrogate, or together
            with ``namespace``'s labels over :data:`MAX_ADDRESS_BYTES`.
    """
    if not isinstance(key, str):
        raise ItemRefusedError(f"store keys are strings, got {type(key).__name__}")
    problem = unstorable(key)
    if problem is not None:
        raise ItemRefusedError(f"the key holds {problem}, which PostgreSQL cannot store")
    size = len(key.encode()) + sum(len(label.encode()) for label in namespace)
    if size > MAX_ADDRESS_BYTES:
        raise ItemRefusedError(
            f"the namespace and key are {size} bytes (UTF-8) together; at most "
            f"{MAX_ADDRESS_BYTES}: use a shorter key"
        )
    return key


def check_fields(fields: object) -> tuple[str, ...]:
    """``fields`` as a tuple of non-empty paths.

    Raises:
        ConfigurationError: not a list of non-empty strings, or an empty one.
    """
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
        raise ConfigurationError(
            f"index fields must be a non-empty list of paths (e.g. ['content']), not {fields!r}"
        )
    for field in fields:
        if not isinstance(field, str) or not field:
            raise ConfigurationError(f"index field {field!r} is not a path")
    return tuple(fields)


@dataclass(frozen=True)
class IndexFields:
    """Which parts of a value are an item's searchable text (the store's ``index``)."""

    fields: tuple[str, ...] = (WHOLE_VALUE,)

    @classmethod
    def of(cls, index: object, dimension: int) -> IndexFields:
        """The fields of a LangGraph ``index`` config (kioku embeds with its own embedder).

        Raises:
            ConfigurationError: not a dict, ``embed`` given, ``dims`` other than the
                embedder's, an unknown key, or no fields.
        """
        if index is not None and not isinstance(index, Mapping):
            raise ConfigurationError(
                f'index is a dict such as {{"fields": ["content"]}}, not {index!r}'
            )
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


def indexed_text(value: Mapping[str, Any], fields: Sequence[str], max_length: int) -> str | None:
    """The text of ``value`` a model may see, or ``None`` when there is none.

    The text at each field, one per line, sanitised as kioku's create sanitises a memory.
    The whole value (``"$"``) is its JSON with sorted keys, as LangGraph embeds it.

    Raises:
        ItemRefusedError: the text is longer than ``max_length`` (kioku's
            ``MAX_MEMORY_LENGTH``, the limit of every memory).
    """
    texts = [text for field in fields for text in get_text_at_path(value, field)]
    checked = check_content("\n".join(text for text in texts if text.strip()), max_length)
    if checked.fault is ContentFault.TOO_LONG:
        raise ItemRefusedError(
            f"the item's indexed text is {len(checked.text)} characters; a memory holds at most "
            f"{max_length} (MAX_MEMORY_LENGTH): index shorter fields, or put it with index=False"
        )
    return checked.text if checked.fault is None else None


def unindexed_text(value: Mapping[str, Any]) -> str:
    """The memory text of an item without indexed text (:data:`NOT_INDEXED`)."""
    dumped = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return NOT_INDEXED.format(hashlib.sha256(dumped.encode()).hexdigest()[:16])


def check_value(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object whose every key is a string PostgreSQL can store.

    Raises:
        ItemRefusedError: another type, a key that is not a string, a value JSON cannot
            hold, or a string holding a NUL character or a lone surrogate.
    """
    if not isinstance(value, dict):
        raise ItemRefusedError(f"store values are dicts, got {type(value).__name__}")
    problem = json_problem(value)
    if problem is not None:
        raise ItemRefusedError(f"the value {problem}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ItemRefusedError(f"the value is not JSON: {one_line(exc)}") from exc
    return value


def json_problem(value: object) -> str | None:
    """Why ``value`` cannot be kept as JSON unchanged in PostgreSQL, or ``None``.

    Dicts must have string keys (JSON would silently turn ``1`` into ``"1"``) and no
    string may hold a NUL character or a lone surrogate (``jsonb`` cannot store them).
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = unstorable(item)
            if problem is not None:
                return f"holds {problem}, which PostgreSQL cannot store"
        elif isinstance(item, Mapping):
            for key in item:
                if not isinstance(key, str):
                    return f"has the key {key!r}: JSON object keys are strings"
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None
