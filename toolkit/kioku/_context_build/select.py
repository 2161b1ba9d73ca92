"""Which other-channel short-term memories a turn may recall (SPEC §10): pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kioku._context import TurnContext
from kioku._domain.settings import ServerSettings
from kioku._stm.model import StmCandidate


def is_private(channel_id: str, parent_id: str | None, settings: ServerSettings) -> bool:
    """Whether a channel, or the channel a thread belongs to, is private."""
    private = settings.private_channel_ids
    return channel_id in private or (parent_id is not None and parent_id in private)


def select_other_channels(
    candidates: Sequence[StmCandidate],
    context: TurnContext,
    settings_by_server: Mapping[str, ServerSettings],
    *,
    limit: int,
) -> list[StmCandidate]:
    """Newest first, at most ``limit``, without channels the turn may not see.

    Private channels (the server's ``private_channel_ids`` and their threads, and
    channels a turn called private when it wrote there) of this server are left out unless
    the current channel is private or the server bypasses STM privacy; private channels
    of other servers are always left out. DM entries reach here only for the user who
    owns them (opt-in, or inside a DM).
    """
    here = settings_by_server.get(context.server_id or "", ServerSettings())
    current_private = context.is_private_channel or is_private(
        context.channel_id, context.parent_channel_id, here
    )
    chosen: list[StmCandidate] = []
    seen_channels: set[str] = set()
    for candidate in sorted(candidates, key=lambda c: c.last_updated, reverse=True):
        channel = candidate.key.channel_id
        if channel == context.channel_id or channel in seen_channels:
            continue
        if candidate.server_id is not None:
            settings = settings_by_server.get(candidate.server_id, ServerSettings())
            same_server = candidate.server_id == context.server_id
            exempt = same_server and (current_private or here.stm_privacy_bypass)
            private = candidate.private or is_private(
                channel, candidate.parent_channel_id, settings
            )
            if private and not exempt:
                continue
        seen_channels.add(channel)
        chosen.append(candidate)
        if len(chosen) == limit:
            break
    return chosen
