"""A person connected their account at a server: the connect questions their calls wait on are found here,
to be accepted each through the same decision as any answer (`dispatch.taking.accept_connects`), and those
calls' refused requests go out again."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation
from console.calls.states import QuestionMode, QuestionStatus
from console.identity import Viewer
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.enterprise import enterprise_client, enterprise_grant


async def connects_waiting(*, session: AsyncSession, viewer: Viewer, server_id: str) -> list[str]:
    """The viewer's pending connect questions for the server, oldest first: once they connected, each is
    accepted in a transaction of its own (`dispatch.taking.accept_connects`)."""
    query = (
        select(Elicitation.id)
        .join(Call, Call.id == Elicitation.call_id)
        .where(
            Elicitation.owner_id == viewer.user_id,
            Elicitation.mode == QuestionMode.CONNECT,
            Elicitation.status == QuestionStatus.PENDING,
            Call.server_id == server_id,
        )
        .order_by(Elicitation.created_at)
    )
    return list((await session.execute(query)).scalars())


async def connect_enterprise_waiting(
    *, session: AsyncSession, outbound: Outbound, viewer: Viewer
) -> list[str]:
    """After the viewer signed in through the identity provider: a grant for each enterprise-managed
    server one of their pending connect questions waits on; the questions to accept now, those of the
    servers granted (a server whose grant was refused keeps its questions pending)."""
    server_ids = (
        (
            await session.execute(
                select(Call.server_id)
                .join(Elicitation, Elicitation.call_id == Call.id)
                .where(
                    Elicitation.owner_id == viewer.user_id,
                    Elicitation.mode == QuestionMode.CONNECT,
                    Elicitation.status == QuestionStatus.PENDING,
                )
                .distinct()
            )
        )
        .scalars()
        .all()
    )
    granted: list[str] = []
    for server_id in server_ids:
        server = await session.get(McpServer, server_id)
        if server is None or enterprise_client(outbound, server) is None:
            continue
        grant = await enterprise_grant(
            session=session, outbound=outbound, server=server, user_id=viewer.user_id
        )
        if grant is not None:
            granted.extend(await connects_waiting(session=session, viewer=viewer, server_id=server_id))
    return granted
