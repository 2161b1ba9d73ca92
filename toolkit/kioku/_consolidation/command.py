"""``kioku consolidate``: a consolidation pass from the command line."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kioku._errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from rich.console import Console

    from kioku._accounts import AccountRepository
    from kioku._consolidation.report import ConsolidationReport
    from kioku._consolidation.saved import SavedPlan
    from kioku._context import Persona
    from kioku._domain.scopes import PersonalScope, ServerScope
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
    model: BaseChatModel | None,
    console: Console,
    *,
    server_id: str,
    persona_name: str | None,
    user_id: str | None,
    apply: bool,
    save_plan: str | None = None,
    saved_plan: str | None = None,
) -> None:
    """Consolidate a server's server-wide memories, or one user's personal ones, and report.

    ``save_plan`` names a new file for the dry run's plan; ``saved_plan`` a file written so,
    whose plan is used instead of asking ``model``.

    Raises:
        ConfigurationError: the server, persona or user is unknown; a plan file cannot be
            read or written, or is for another scope.
    """
    from kioku._consolidation.scope import consolidation_context

    scope, persona = _scope(store, server_id, persona_name, user_id)
    context = consolidation_context(store, scope, server_id=server_id, persona=persona)
    plan = read_plan(Path(saved_plan)) if saved_plan is not None else None
    if save_plan is not None:  # checked before the model is asked
        _check_new_file(save_plan)
    with console.status("Applying the saved plan…" if plan else "Asking the model…"):
        report = store.consolidate(scope, model, apply=apply, context=context, plan=plan)
    console.print(report.render(), markup=False, highlight=False, soft_wrap=True)
    if save_plan is not None:
        _save_plan(console, report, save_plan)


def _scope(
    store: KiokuStore, server_id: str, persona_name: str | None, user_id: str | None
) -> tuple[ServerScope | PersonalScope, Persona]:
    """The scope to consolidate (``user_id``'s personal one, else the server's), its persona.

    Raises:
        ConfigurationError: the server, persona or user is unknown.
    """
    from kioku._context import server_key
    from kioku._db.models import Server, User
    from kioku._domain.scopes import PersonalScope, ServerScope

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
    return scope, persona


def _check_new_file(path: str) -> None:
    """Refuse a ``--save-plan`` file that exists, or whose folder does not.

    Raises:
        ConfigurationError: the file cannot be created.
    """
    if os.path.lexists(path):
        raise ConfigurationError(_EXISTS.format(path=path))
    if not Path(path).absolute().parent.is_dir():
        raise ConfigurationError(f"cannot create {path}: its folder does not exist")


def _save_plan(console: Console, report: ConsolidationReport, path: str) -> None:
    """Write the plan ``report`` holds to ``path``, or say there is none."""
    kept = report.saved_plan()
    if kept is None:
        console.print("No plan to save: the model was not asked.", markup=False)
        return
    write_plan(Path(path), kept)
    console.print(
        f"Plan saved to {path}; apply exactly it with --apply --plan {path}.",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


_EXISTS = "{path} already exists: remove it or name a new file for --save-plan"


def write_plan(path: Path, plan: SavedPlan) -> None:
    """Write ``plan`` to ``path``, a new file only its owner may read (it holds memories).

    Raises:
        ConfigurationError: the file exists or cannot be created.
    """
    import json

    data = json.dumps(plan.to_dict(), indent=1).encode()  # ASCII: any text survives
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o600)
    except FileExistsError:
        raise ConfigurationError(_EXISTS.format(path=path)) from None
    except OSError as exc:
        raise ConfigurationError(f"cannot create {path}: {exc.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise ConfigurationError(f"cannot write {path}: {exc.strerror}") from None


MAX_PLAN_BYTES = 50_000_000
"""A larger file is not read as a plan."""


def read_plan(path: Path) -> SavedPlan:
    """The plan ``kioku consolidate --save-plan`` wrote to ``path``.

    Raises:
        ConfigurationError: the file cannot be read or is not a saved plan.
    """
    import json
    import stat

    from kioku._consolidation.saved import SavedPlan

    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ConfigurationError(f"{path} is not a regular file: not a saved plan")
        with path.open("rb") as file:
            raw = file.read(MAX_PLAN_BYTES + 1)
        if len(raw) > MAX_PLAN_BYTES:
            raise ConfigurationError(f"{path} is over {MAX_PLAN_BYTES:,} bytes: not a plan")
        data = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the plan {path}: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:
        raise ConfigurationError(f"{path} is not a saved plan (not JSON: {exc})") from None
    return SavedPlan.from_dict(data)


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
