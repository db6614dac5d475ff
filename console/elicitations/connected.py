"""A person connected their account at a server: the connect questions their calls wait on are accepted,
each through the same decision as any answer, and those calls' refused requests go out again."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation
from console.elicitations.decisions import Decision, answer
from console.errors import Conflict, Forbidden, Gone, InvalidInput
from console.identity import Viewer
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.enterprise import enterprise_client, enterprise_grant


async def accept_connects(*, session: AsyncSession, viewer: Viewer, server_id: str) -> list[Decision]:
    """Accept the viewer's pending connect questions for the server, oldest first, in the caller's
    transaction; the decisions made. A question decided or expired meanwhile (or refused) is left as it
    is: each answer is a savepoint of its own."""
    waiting = (
        (
            await session.execute(
                select(Elicitation.id)
                .join(Call, Call.id == Elicitation.call_id)
                .where(
                    Elicitation.owner_id == viewer.user_id,
                    Elicitation.mode == "connect",
                    Elicitation.status == "pending",
                    Call.server_id == server_id,
                )
                .order_by(Elicitation.created_at)
            )
        )
        .scalars()
        .all()
    )
    decided: list[Decision] = []
    for elicitation_id in waiting:
        try:
            async with session.begin_nested():
                decision = await answer(
                    session=session, viewer=viewer, elicitation_id=elicitation_id, action="accept"
                )
        except (Conflict, Gone, Forbidden, InvalidInput):
            continue
        decided.append(decision)
    return decided


async def connect_enterprise_waiting(
    *, session: AsyncSession, outbound: Outbound, viewer: Viewer
) -> list[Decision]:
    """After the viewer signed in through the identity provider: a grant for each enterprise-managed
    server one of their pending connect questions waits on, and those questions accepted; the decisions
    made (a server whose grant was refused keeps its questions pending)."""
    server_ids = (
        (
            await session.execute(
                select(Call.server_id)
                .join(Elicitation, Elicitation.call_id == Call.id)
                .where(
                    Elicitation.owner_id == viewer.user_id,
                    Elicitation.mode == "connect",
                    Elicitation.status == "pending",
                )
                .distinct()
            )
        )
        .scalars()
        .all()
    )
    decided: list[Decision] = []
    for server_id in server_ids:
        server = await session.get(McpServer, server_id)
        if server is None or enterprise_client(outbound, server) is None:
            continue
        granted = await enterprise_grant(
            session=session, outbound=outbound, server=server, user_id=viewer.user_id
        )
        if granted is not None:
            decided.extend(await accept_connects(session=session, viewer=viewer, server_id=server_id))
    return decided
