"""``KiokuStore``: the store applications hold, on top of :class:`~kioku._core.KiokuCore`.

It opens the database from settings and offers what sits above the flows: the shared
short-term memory, the sweeper, erasure and consolidation. The flows themselves take the
core, so none of them imports this module.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kioku._config import KiokuSettings, load_settings
from kioku._consolidation.report import ConsolidationReport
from kioku._consolidation.run import consolidate
from kioku._consolidation.saved import SavedPlan
from kioku._context import TurnContext
from kioku._core import KiokuCore
from kioku._db.engine import check_pgvector
from kioku._db.opening import open_database
from kioku._db.vectors import refuse_other_embedder
from kioku._embeddings import EmbedderSpec
from kioku._erasure import ErasureReceipt, erase_server, erase_user
from kioku._inspection import (
    LIST_LIMIT,
    MemoryDetail,
    MemoryFilter,
    StoredMemory,
    list_memories,
    show_memory,
)
from kioku._inspection_search import search_memories
from kioku._memory.directory import UserDirectory
from kioku._memory.windows import CacheKey
from kioku._stm.store import ShortTermMemory
from kioku._sweeper import SweepTimer

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class KiokuStore(KiokuCore):
    """Owns the engines and hands out sessions; tools and the graph share one store.

    Example:
        ```python
        store = KiokuStore.open()   # embedded PostgreSQL unless KIOKU_DATABASE_URL is set
        store.setup()               # apply migrations (idempotent)
        ```
    """

    _sweeper: SweepTimer | None = None
    """The sweeper's timer, once :meth:`start_sweeper` started it."""
    _short_term: ShortTermMemory | None = None
    """The shared short-term memory, once :meth:`short_term_memory` made it."""

    @classmethod
    def open(
        cls,
        settings: KiokuSettings | None = None,
        *,
        directory: UserDirectory | None = None,
        embedder: EmbedderSpec | None = None,
        check_embedder: bool = True,
    ) -> KiokuStore:
        """Connect to ``KIOKU_DATABASE_URL``, or start the embedded server when it is unset.

        Args:
            settings: default: read from the environment.
            directory: where names are resolved (default: the database's users).
            embedder: default: ``KIOKU_EMBEDDINGS``'s.
            check_embedder: refuse an embedder other than the one the stored vectors come
                from (only ``kioku reembed``, which switches embedders, turns this off).

        Raises:
            ConfigurationError: when the database cannot be used, or holds vectors of
                another embedder; the message says why.
        """
        settings = settings or load_settings()
        database = open_database(settings)
        engine = database.engine
        check_pgvector(engine)
        store = cls(
            engine,
            settings=settings,
            directory=directory,
            embedded=database.embedded,
            embedder=embedder,
        )
        if check_embedder:
            try:
                with engine.connect() as connection:
                    spec = store.embedder
                    refuse_other_embedder(connection, spec.model, spec.dimension)
            except BaseException:
                store.close()
                raise
        return store

    def short_term_memory(self) -> ShortTermMemory:
        """This store's short-term memory (made on first use).

        The one instance the middleware and :func:`kioku.memory_tools` share by default, so
        the summary tool and passive capture see each other's writes without a reread.
        """
        with self._checkpointer_lock:
            if self._short_term is None:
                self._short_term = ShortTermMemory(self)
            return self._short_term

    def start_sweeper(self) -> None:
        """Run the sweeper on a timer in this process (idempotent).

        Called by the per-turn graph and the MCP server, so long-lived processes keep
        checkpoints bounded and apply history retention without anyone running
        ``kioku sweep``; ``KIOKU_SWEEP_INTERVAL_MINUTES=0`` turns it off.
        """
        minutes = self.settings.sweep_interval_minutes
        if self._sweeper is not None or minutes <= 0:
            return
        self._sweeper = SweepTimer(self, timedelta(minutes=minutes))
        self._sweeper.start()

    def _stop_sweeper(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.stop()

    def close(self) -> None:
        """Stop the sweeper, dispose of pooled connections and stop the embedded server.

        The embedded server stops only if this store started it.

        From async code, ``await store.aclose()`` does the same off the event loop.
        """
        self._stop_sweeper()
        super().close()
        self._short_term = None

    def erase_user(self, user_id: str) -> ErasureReceipt:
        """Forget everything kioku holds about ``user_id`` ("forget everything about me").

        Deletes their personal memories in every lineage and the server-wide memories kioku
        saved about them as a bridged user, scrubs the text of those memories' history
        (tombstones keep who, when and what kind), removes their messages and the bot's
        replies to them from short-term memory and conversation threads (every checkpoint
        version), and drops their memberships and directory row.

        Returns:
            An :class:`~kioku._erasure.ErasureReceipt` counting what this run changed per
            kind (erasing the same person again reports zeros).
        """
        return erase_user(self.deps, self.checkpointer(), user_id)

    async def aerase_user(self, user_id: str) -> ErasureReceipt:
        """Async twin of :meth:`erase_user` (runs in a worker thread)."""
        return await asyncio.to_thread(self.erase_user, user_id)

    def erase_server(self, server_id: str) -> ErasureReceipt:
        """Forget everything kioku holds about a server.

        Its server-wide memories in every lineage and their history text, its channels'
        short-term memory, its members, personas and settings.
        """
        return erase_server(self.deps, self.checkpointer(), server_id)

    async def aerase_server(self, server_id: str) -> ErasureReceipt:
        """Async twin of :meth:`erase_server` (runs in a worker thread)."""
        return await asyncio.to_thread(self.erase_server, server_id)

    def consolidate(
        self,
        scope: CacheKey,
        model: BaseChatModel | None = None,
        *,
        apply: bool = False,
        context: TurnContext | None = None,
        plan: SavedPlan | None = None,
    ) -> ConsolidationReport:
        """Ask ``model`` once which memories of ``scope`` to merge or retire; apply if asked.

        The model sees the scope's newest memories (up to ``MEMORY_WINDOW``) as
        ``ID:N text`` data lines under ``kioku.CONSOLIDATION_PROMPT`` and answers with JSON
        merges and supersessions. Ids it was not shown, ids used twice and over-long text
        are refused (listed in the plan's ``rejected``); a reply that is not JSON gives an
        empty plan with an ``error``. A dry run (the default) changes nothing. ``apply=True``
        carries the plan out through ``update_long_term_memory``'s flow, change by change,
        so scope checks, privacy, limits, history and notices apply as to a tool call.

        To apply exactly the plan a dry run showed, pass ``plan=report.saved_plan()`` (no
        model is asked): the reply is checked again, and an action naming a memory whose
        text changed since, or that is gone, is dropped with the reason. Either way the
        scope is read again just before applying, so a memory changed while the model was
        thinking is left alone.

        Args:
            scope: a :class:`ServerScope` or :class:`PersonalScope`.
            model: any LangChain chat model. Not needed with ``plan``.
            apply: carry the plan out.
            context: the turn context to write with (default:
                ``kioku.consolidation_context(store, scope)``); it must address ``scope``.
            plan: a :class:`~kioku.SavedPlan` of an earlier dry run over ``scope``.

        Returns:
            A :class:`~kioku.ConsolidationReport`: the plan, and each change's status.

        Raises:
            ConfigurationError: ``context`` addresses other memories than ``scope``; neither
                ``model`` nor ``plan`` is given; ``plan`` is for another scope.
            ModelCallError: the model call failed or its answer was not a reply (its own
                exception is the ``__cause__``); nothing is changed.
        """
        return consolidate(self.deps, scope, model, apply=apply, context=context, plan=plan)

    # what kioku remembers, for operators (never offered to the model) -------------------

    def list_memories(
        self,
        *,
        server_id: str | None = None,
        user_id: str | None = None,
        lineage_id: int | None = None,
        memory_type: str | None = None,
        status: str | None = "active",
        limit: int = LIST_LIMIT,
        offset: int = 0,
    ) -> list[StoredMemory]:
        """Stored memories, newest first: a server's (``server_id``) or a person's (``user_id``).

        Every filter narrows; ``status=None`` includes archived memories. An operator's
        view: every memory the filters select, whoever it is about.
        """
        where = MemoryFilter(server_id, user_id, lineage_id, memory_type, status)
        return list_memories(self.deps.reads, where, limit=limit, offset=offset)

    def show_memory(self, memory_id: int) -> MemoryDetail:
        """Memory ``memory_id`` (``None`` once deleted) with every change to it."""
        return show_memory(self.deps.reads, memory_id)

    def search_memories(
        self, scope: CacheKey, query: str, *, limit: int = 10
    ) -> list[tuple[StoredMemory, float]]:
        """``scope``'s memories best matching ``query`` (hybrid search, no relevance floor)."""
        return search_memories(self, scope, query, limit=limit)

    def export_user(self, user_id: str) -> dict[str, Any]:
        """Everything kioku holds about ``user_id``, JSON-ready: the access request.

        What :meth:`erase_user` would remove, found the same way: their memories (and
        the server-wide ones saved about them as a bridged user) with their history,
        directory row, memberships, own short-term memory entries, and their messages
        and the replies to them in other entries and in the conversation threads.
        """
        from kioku._export import export_person

        return export_person(self.deps, self.checkpointer(), user_id)

