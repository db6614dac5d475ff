"""`console audit keygen|verify|export`: the checkpoint key, checking the chain, and offline exports."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.checking import verify_database
from console.audit.export import verify_file
from console.audit.extract import export_events
from console.audit.signing import (
    load_private_key,
    load_public_key,
    new_private_key_text,
    public_key_text,
    signer_from,
)
from console.audit.store import AuditFilter
from console.audit.verify import Report
from console.audit.witnessing import restore_problem
from console.cli.backup import existing_database
from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.errors import InvalidInput
from console.files import write_private
from console.identity import team_by_name


def add_audit_commands(sub: Subcommands) -> None:
    audit = sub.add_parser("audit", help="the tamper-evident audit log").add_subparsers(
        title="audit commands"
    )

    keygen = audit.add_parser("keygen", help="make an Ed25519 key for signing audit checkpoints")
    keygen.add_argument("--out", type=Path, help="write the private key to this file (mode 600)")
    keygen.set_defaults(handler=_keygen)

    verify = audit.add_parser(
        "verify", help="recompute the chain and check every checkpoint; exit 0 only when all is well"
    )
    verify.add_argument("--file", type=Path, help="check an export file offline instead of the database")
    verify.add_argument("--public-key", metavar="KEY", help="base64 public key, or a file holding it")
    verify.set_defaults(handler=_verify)

    export = audit.add_parser("export", help="write events to a file that `audit verify --file` checks")
    export.add_argument("--since", help="ISO date or time (UTC unless it says otherwise)")
    export.add_argument("--until", help="ISO date or time, exclusive")
    export.add_argument("--team", help="only this team's events")
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--out", type=Path, help="the file to write (default: standard output)")
    export.set_defaults(handler=_export)


def _keygen(_settings: Settings, args: Any) -> int:
    private = new_private_key_text()
    public = public_key_text(load_private_key(private).public_key())
    if args.out is not None:
        write_private(args.out, private + "\n")
        say(f"private key written to {args.out}; set CONSOLE_AUDIT_SIGNING_KEY_FILE to it")
    else:
        say(f"CONSOLE_AUDIT_SIGNING_KEY={private}")
    say(f"public key: {public}")
    return 0


def _public_key(settings: Settings, given: str | None) -> Ed25519PublicKey | None:
    if given is not None:
        path = Path(given)
        return load_public_key(path.read_text() if path.is_file() else given)
    signer = signer_from(settings)
    return signer.key.public_key() if signer is not None else None


def _verify(settings: Settings, args: Any) -> int:
    if args.file is not None:
        key = load_public_key(_read_key(args.public_key)) if args.public_key else None
        report = verify_file(args.file.read_bytes(), key)
        lines, ok = report.lines(), report.ok
    else:
        existing_database(settings, "verify")
        key = _public_key(settings, args.public_key)

        async def check(session: AsyncSession) -> tuple[Report, str | None]:
            report = await verify_database(session=session, public_key=key)
            return report, await restore_problem(session=session, settings=settings)

        report, behind = run_with_session(settings, check)
        lines, ok = report.lines(), report.ok and behind is None
        if behind is not None and report.ok:  # whole, and yet ending before what was witnessed
            lines = [
                f"FAILED: {behind}",
                f"the chain itself is intact up to seq {report.last_seq or 0}",
                *lines[1:],
            ]
        elif behind is not None:
            lines.insert(1, behind)
        elif settings.audit_witness_file:
            lines.append(f"audit witness {settings.audit_witness_file}: the chain reaches what it recorded")
    for line in lines:
        say(line)
    return 0 if ok else 1


def _read_key(given: str) -> str:
    path = Path(given)
    return path.read_text() if path.is_file() else given


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"not an ISO date or time: {text!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _export(settings: Settings, args: Any) -> int:
    signer = signer_from(settings)

    async def build(session: AsyncSession) -> bytes:
        team = (await team_by_name(session=session, name=args.team)).id if args.team else None
        f = AuditFilter(team=team, since=_moment(args.since), until=_moment(args.until))
        return await export_events(session=session, f=f, fmt=args.format, signer=signer)

    data = run_with_session(settings, build)
    if args.out is not None:
        args.out.write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0
