"""The agent benchmark's memories and their precomputed vectors."""

from __future__ import annotations

from bench.agent_kioku import KiokuSetup
from bench.agent_model import every_text
from bench.agent_peers import PeerSetup
from bench.corpus import DIM, Lookup, sentences
from kioku._embeddings import HashingEmbeddings


def setups(url: str, per_scope: int) -> tuple[KiokuSetup, PeerSetup]:
    """``per_scope`` memories per scope for kioku and the peers, on ``url``'s database.

    kioku's user has two scopes (their personal memories and their own space's); the
    peers' one namespace holds the same texts as kioku's personal scope. Every text a
    load or a turn embeds is embedded here, before any timing.
    """
    texts = sentences(2 * per_scope)
    personal, space = texts[:per_scope], texts[per_scope:]
    embeddings = Lookup.of([*every_text(), *texts], HashingEmbeddings(DIM))
    scopes = {"target_user": personal, "server_wide": space}
    return KiokuSetup(url, per_scope, scopes, embeddings), PeerSetup(url, personal, embeddings)
