"""Building an export from the database: the selected events, stubs between them, anchoring checkpoints."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.export import Format, header, redacted, render, stub
from console.audit.links import redact_payload
from console.audit.records import checkpoint_record, event_record, timestamp
from console.audit.signing import Signer
from console.audit.store import AuditFilter, chain_start, checkpoints, events_between, matching_seqs
from console.db import utcnow


async def export_events(
    *, session: AsyncSession, f: AuditFilter, fmt: Format, signer: Signer | None
) -> bytes:
    """The events matching `f` as a self-contained, verifiable file."""
    filters: dict[str, Any] = {
        "team": f.team,
        "user": f.user,
        "server": f.server,
        "tool": f.tool,
        "action": f.action,
        "outcome": f.outcome,
        "call": f.call,
        "since": timestamp(f.since) if f.since else None,
        "until": timestamp(f.until) if f.until else None,
    }
    records: list[dict[str, Any]] = [
        header(
            public_key=signer.public_text if signer else None,
            key_id=signer.key_id if signer else None,
            filters=filters,
            at=timestamp(utcnow()),
        )
    ]
    selected = await matching_seqs(session=session, f=f)
    if selected:
        records += await _span(session, set(selected), selected[0], selected[-1])
    return render(records, fmt, signer)


async def _span(session: AsyncSession, selected: set[int], first: int, last: int) -> list[dict[str, Any]]:
    signed = await checkpoints(session=session)
    anchor = next((c for c in reversed(signed) if c.seq < first), None)
    closing = next((c for c in signed if c.seq >= last), None)
    begin = await chain_start(session=session)
    start = anchor.seq + 1 if anchor else min(first, begin if begin is not None else first)
    end = closing.seq if closing else None
    by_seq = {c.seq: c for c in signed}
    out: list[dict[str, Any]] = [checkpoint_record(anchor)] if anchor else []
    async for row in events_between(session=session, start=start, end=end):
        record = event_record(row)
        if row.seq not in selected:
            out.append(stub(record))
        else:
            cut = redact_payload(row.action, record["payload"])
            out.append(record if cut is None else redacted(record, cut))
        if row.seq in by_seq:
            out.append(checkpoint_record(by_seq[row.seq]))
    return out
