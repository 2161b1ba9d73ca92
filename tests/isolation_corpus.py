"""A generated multi-tenant corpus, random turns over it, and the rule saying what a turn
may see: shared by the isolation property test and the benchmark's long run.

Every memory's content carries a marker (``zq<N>x``), so whatever a context or a tool
result shows can be traced back to the memory it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from hypothesis import strategies as st
from sqlalchemy import insert, select

from kioku import KiokuStore, Participant, Persona, PrivacyLevel, TurnContext
from kioku._context_build.build import ContextBuilder
from kioku._db.models import Memory
from kioku._memory.repository import GLOBAL_LINEAGE
from kioku._memory.update import update_long_term_memory
from kioku._tools.search import search_long_term_memory

SERVERS = ("s0", "s1", "s2")
USERS = tuple(f"u{i}" for i in range(6))
MEMBERS = {"s0": {"u0", "u1", "u2", "u3"}, "s1": {"u2", "u3", "u4", "u5"}, "s2": {"u0", "u5"}}
MARKER = re.compile(r"zq(\d+)x")
BOT = "bot"


@dataclass(frozen=True)
class CorpusMemory:
    """Where one generated memory lives."""

    id: int
    scope: str
    server_id: str | None
    user_id: str | None
    lineage: int


@dataclass
class Corpus:
    """Servers (one without personal memories), personas and their lineages, memories."""

    personas: dict[str, list[Persona]]
    personal_enabled: dict[str, bool]
    memories: dict[int, CorpusMemory] = field(default_factory=dict)
    """By marker number."""

    def changeable(self, context: TurnContext) -> set[int]:
        """Marker numbers the update tool may reach (issue #11): what the turn may see,
        and the triggering user's own personal memories whatever their privacy. Privacy
        may refuse more, never allow more."""
        return self._reachable(context, self._shown_people(context) | {context.user.user_id})

    def allowed(self, context: TurnContext) -> set[int]:
        """Marker numbers the turn may see (SPEC §10): the rule, written independently."""
        return self._reachable(context, self._shown_people(context))

    def _shown_people(self, context: TurnContext) -> set[str]:
        if not self.personal_enabled[context.memory_server_key]:
            return set()
        return {
            p.user_id for p in context.all_participants() if p.privacy == PrivacyLevel.MINIMAL
        } - {context.bot_user_id}

    def _reachable(self, context: TurnContext, personal_users: set[str]) -> set[int]:
        """The server's memories of the lineage, and personal ones of ``personal_users``
        (lineage active or global)."""
        server, lineage = context.memory_server_key, context.persona.lineage_id
        return {
            marker
            for marker, m in self.memories.items()
            if (m.scope == "server" and m.server_id == server and m.lineage == lineage)
            or (
                m.scope == "personal"
                and m.user_id in personal_users
                and m.lineage in (lineage, GLOBAL_LINEAGE)
            )
        }


def build_corpus(store: KiokuStore) -> Corpus:
    """Three servers; personas with own and shared lineages; memories everywhere."""
    personas: dict[str, list[Persona]] = {}
    with store.accounts() as accounts:
        for server in SERVERS:
            accounts.upsert_server(
                server,
                server,
                self_teaching_enabled=True,
                personal_memories_enabled=server != "s2",
            )
        for user in USERS:
            accounts.upsert_user(user, f"User {user}")
        for server, members in MEMBERS.items():
            for user in sorted(members):
                accounts.add_member(server, user)
        first = accounts.create_persona("s0", "Aoi")
        personas["s0"] = [first, accounts.create_persona("s0", "Beni")]
        # s1 runs a persona of the same lineage as s0's first: same lineage, other server.
        personas["s1"] = [accounts.create_persona("s1", "Aoi", lineage_id=first.lineage_id)]
        personas["s2"] = [accounts.create_persona("s2", "Chika")]
    lineages = sorted({p.lineage_id for ps in personas.values() for p in ps})
    rows: list[dict[str, object]] = []
    for server in SERVERS:
        for lineage in lineages:
            rows += [{"scope": "server", "server_id": server, "persona_lineage_id": lineage}] * 3
    for user in USERS:
        for lineage in [*lineages, GLOBAL_LINEAGE]:
            rows += [{"scope": "personal", "user_id": user, "persona_lineage_id": lineage}] * 2
    rows = [{**row, "content": f"note {i} about tea zq{i}x"} for i, row in enumerate(rows)]
    corpus = Corpus(personas, {s: s != "s2" for s in SERVERS})
    with store.transaction() as session:
        session.execute(insert(Memory), rows)
        for memory in session.scalars(select(Memory)):
            marker = int(MARKER.findall(memory.content)[0])
            corpus.memories[marker] = CorpusMemory(
                memory.id,
                memory.scope,
                memory.server_id,
                memory.user_id,
                memory.persona_lineage_id,
            )
    return corpus


@st.composite
def turns(draw: st.DrawFn, corpus: Corpus) -> TurnContext:
    """A turn: a server, one of its personas, some participants with privacy levels."""
    server = draw(st.sampled_from(SERVERS))
    users = draw(st.lists(st.sampled_from(USERS), min_size=1, max_size=4, unique=True))
    people = tuple(
        Participant(u, f"User {u}", privacy=draw(st.sampled_from(list(PrivacyLevel))))
        for u in users
    )
    return TurnContext(
        server_id=server,
        server_name=server,
        channel_id=draw(st.sampled_from(["c1", "c2"])),
        user=people[0],
        participants=people,
        persona=draw(st.sampled_from(corpus.personas[server])),
        bot_user_id=BOT,
    )


def violations(
    store: KiokuStore, corpus: Corpus, builder: ContextBuilder, context: TurnContext, probe: int
) -> Iterator[str]:
    """Whatever the turn was shown outside what it may see, or changed outside what it may
    change (one probe: an update or a delete of a memory out of its reach)."""
    allowed = corpus.allowed(context)
    built = builder.build(context, [], system_prompt="")
    rendered = {int(n) for item in built.items for n in MARKER.findall(item.text)}
    for marker in rendered - allowed:
        yield f"context showed memory {marker} ({corpus.memories[marker]})"
    _, records = search_long_term_memory(store, context, {"query": "note about tea", "limit": 20})
    for record in records:
        marker = int(MARKER.findall(record["content"])[0])
        if marker not in allowed:
            yield f"search returned memory {marker} ({corpus.memories[marker]})"
    forbidden = sorted(set(corpus.memories) - corpus.changeable(context))
    if forbidden:
        target = corpus.memories[forbidden[probe % len(forbidden)]]
        content = "hacked" if probe % 2 else ""  # an update, or a delete
        arguments: dict[str, object] = {"memory_id": target.id, "memory_content": content}
        if target.user_id is not None:
            arguments["target_user"] = f"User {target.user_id}"
        with store.sessions() as session:
            result = update_long_term_memory(session, store, context, arguments)
        refusals = {"memory_update_failed_not_found", "memory_update_failed_user_not_found"}
        if target.user_id == context.user.user_id:  # their own, in another lineage
            refusals.add("memory_update_failed_privacy_restricted")  # same for any id
        if result.status not in refusals:
            yield f"{result.status}: reached memory {target}"
        if MARKER.search(str(result.to_dict())):
            yield f"{result.status}: the result carried memory text of {target}"
