"""Each database function's current text is a file of ``kioku/_db/sql/``; migrations
install exactly those texts (each carries a snapshot of its own, none patches another's)."""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import Connection, Engine, text

import kioku

SQL = Path(kioku.__path__[0]) / "_db" / "sql"
MIGRATIONS = Path(kioku.__path__[0]) / "_db" / "migrations" / "versions"

_FUNCTIONS = text(
    "SELECT p.proname, p.pronargs, pg_get_function_identity_arguments(p.oid), "
    "pg_get_functiondef(p.oid) FROM pg_proc AS p "
    "JOIN pg_namespace AS n ON n.oid = p.pronamespace "
    "WHERE n.nspname = :schema AND p.proname LIKE 'kioku\\_%'"
)


def _functions(connection: Connection, schema: str) -> dict[tuple[str, str], tuple[int, str]]:
    """``(name, argument types)`` → ``(argument count, definition)`` of ``schema``'s functions."""
    rows = connection.execute(_FUNCTIONS, {"schema": schema})
    return {
        (name, arguments): (count, definition.replace(f" {schema}.", " "))
        for name, count, arguments, definition in rows
    }


def test_the_migrated_database_holds_exactly_the_files_functions(engine: Engine) -> None:
    """After ``upgrade head`` every kioku function is defined as its file says, and every
    file names one function: ``name.sql``, or ``name.N.sql`` for the overload of N arguments."""
    files = sorted(SQL.glob("*.sql"))
    assert files
    with engine.connect() as connection, connection.begin() as transaction:
        installed = _functions(connection, "public")
        connection.execute(text("CREATE SCHEMA kioku_files"))
        connection.execute(text("SET LOCAL search_path = kioku_files, public"))
        made: dict[tuple[str, str], tuple[int, str]] = {}
        for path in files:
            connection.exec_driver_sql(path.read_text())
            [(key, (count, definition))] = (
                _functions(connection, "kioku_files").items() - made.items()
            )
            name, _, arity = path.name.removesuffix(".sql").partition(".")
            assert key[0] == name, path.name
            assert not arity or int(arity) == count, path.name
            made[key] = (count, definition)
        transaction.rollback()
    assert sorted(made) == sorted(installed)
    for key, (_, definition) in made.items():
        assert definition == installed[key][1], key


def test_each_file_is_the_text_of_a_migration() -> None:
    """The files are copies of what a migration installs, to the letter (the test above
    proves it is the newest one)."""
    migrations = "".join(path.read_text() for path in MIGRATIONS.glob("*.py"))
    for path in SQL.glob("*.sql"):
        assert path.read_text().strip() in migrations, path.name


def test_no_migration_patches_another() -> None:
    """A migration carries the full text of what it installs: it imports no other."""
    for path in MIGRATIONS.glob("*.py"):
        source = path.read_text()
        assert not re.search(r"\bimport_module\b|\bimportlib\b", source), path.name
