"""``kioku consolidate``: a consolidation pass from the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku._errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from rich.console import Console

    from kioku._accounts import AccountRepository
    from kioku._context import Persona
    from kioku._store import KiokuStore

NO_MODEL = (
    "kioku consolidate needs a chat model: set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
    "OpenAI-compatible server, KIOKU_OPENAI_MODEL to pick the model)"
)


def consolidation_model() -> BaseChatModel:
    """The chat model ``kioku chat`` uses (``OPENAI_API_KEY`` …).

    Raises:
        ConfigurationError: no model is configured, or it cannot be set up.
    """
    from kioku import _models

    model = _models.openai_model_from_env()
    if model is None:
        raise ConfigurationError(NO_MODEL)
    return model


def run_consolidate(
    store: KiokuStore,
    model: BaseChatModel,
    console: Console,
    *,
    server_id: str,
    persona_name: str | None,
    user_id: str | None,
    apply: bool,
) -> None:
    """Consolidate a server's server-wide memories, or one user's personal ones, and report.

    Raises:
        ConfigurationError: the server, persona or user is unknown.
    """
    from kioku._consolidation.run import consolidate
    from kioku._consolidation.scope import consolidation_context
    from kioku._context import server_key
    from kioku._db.models import Server, User
    from kioku._memory.repository import PersonalScope, ServerScope

    with store.accounts() as accounts:
        if accounts.session.get(Server, server_key(server_id)) is None:
            raise ConfigurationError(
                f"unknown server {server_id!r}: kioku holds no memories or settings for it"
            )
        persona = _persona(accounts, server_id, persona_name)
        if user_id is not None and accounts.session.get(User, user_id) is None:
            raise ConfigurationError(f"unknown user {user_id!r}: kioku holds nothing about them")
    lineage = persona.lineage_id
    scope = (
        PersonalScope(user_id, lineage)
        if user_id is not None
        else ServerScope(server_key(server_id), lineage)
    )
    context = consolidation_context(store, scope, server_id=server_id, persona=persona)
    with console.status("Asking the model…"):
        report = consolidate(store, scope, model, apply=apply, context=context)
    console.print(report.render(), markup=False, highlight=False, soft_wrap=True)


def _persona(accounts: AccountRepository, server_id: str, name: str | None) -> Persona:
    """The persona named ``name``, else the server's only lineage (or the default one)."""
    from sqlalchemy import select

    from kioku._context import DEFAULT_PERSONA, Persona, server_key
    from kioku._db.models import PersonaRow

    if name is not None:
        found = accounts.find_persona(server_id, name)
        if found is None:
            raise ConfigurationError(f"server {server_id!r} has no persona called {name!r}")
        return found
    rows = accounts.session.scalars(
        select(PersonaRow)
        .where(PersonaRow.server_id == server_key(server_id))
        .order_by(PersonaRow.id)
    ).all()
    lineages = {row.lineage_id: row for row in reversed(rows)}  # the oldest of each lineage
    if not lineages:
        return DEFAULT_PERSONA
    if len(lineages) > 1:
        names = ", ".join(sorted({row.name for row in rows}))
        raise ConfigurationError(
            f"server {server_id!r} has several personas ({names}): pass --persona NAME"
        )
    [row] = lineages.values()
    return Persona(row.id, row.name, row.lineage_id)
