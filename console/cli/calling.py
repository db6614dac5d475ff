"""`console call`: one tool call through a throwaway console, its questions answered from the command line
(as the `mcp-tester` of the book the console grew from does) — for server authors and their CI.

The server is a registered one (its settings, values and roots copied from the console's database, where
nothing is recorded) or one given with `--url` or `--command`. Each round prints as one JSON line with
the server's `inputRequests` and the answers given; the last line is the call's end.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Elicitation
from console.calls.states import CallStatus, QuestionMode
from console.cli.common import Subcommands, complain, pairs, run_with_session, say
from console.config import Settings
from console.errors import ConsoleError
from console.identity.models import Team
from console.mcp.admin import ServerSettings
from console.mcp.admin_roots import roots_for_server
from console.mcp.models import McpServer
from console.mcp.names import server_name_problem
from console.mcp.registry import endpoint_for
from console.mcp.roots import Root
from console.mcp.sealed import Outbound
from console.scripted import WAIT, Answer, AnswerRound, Outcome, Round, ScriptedConsole, scripted_console

ACTIONS = ("accept", "decline", "cancel", WAIT)
# A 2026-07-28 server learns of a finished link only from the retry: one waited on is retried this often.
LINK_RETRY_SECONDS = 1.0
UNANSWERED_EXIT = 2  # the --elicit answers ran out: the call still waits
UNREGISTERED = "tested"  # the name a server given by --url or --command gets in the throwaway console


@dataclass(frozen=True)
class Target:
    name: str
    settings: ServerSettings
    roots: tuple[Root, ...] = ()


def add_call_commands(sub: Subcommands) -> None:
    call = sub.add_parser(
        "call",
        help="run one tool call and answer its questions from --elicit (a throwaway database)",
        description="Run one tools/call through a throwaway console and answer each question in order "
        "from the --elicit list. Exit status: 0 completed, 1 failed (or the tool reported an error), "
        "2 a question had no --elicit answer left.",
    )
    call.add_argument("target", nargs="+", metavar="[SERVER] TOOL", help="with --url or --command: TOOL only")
    where = call.add_mutually_exclusive_group()
    where.add_argument("--url", help="an unregistered Streamable HTTP server")
    where.add_argument("--command", help="an unregistered stdio server: program and arguments")
    call.add_argument("--team", help="the registered server's team, when several teams have one of its name")
    call.add_argument("--args", default="{}", metavar="JSON", help="the tool's arguments (a JSON object)")
    call.add_argument(
        "--elicit",
        action="append",
        default=[],
        metavar="ANSWER",
        help="accept, accept:{JSON content}, decline, cancel, or wait (a link question: wait for the server "
        "to finish it itself, as it says with notifications/elicitation/complete on MCP 2025-11-25 or on a "
        "retry once a second on 2026-07-28, within --timeout); one per question, in order",
    )
    call.add_argument("--header", action="append", default=[], metavar="K=V", help="HTTP header (--url)")
    call.add_argument("--env", action="append", default=[], metavar="K=V", help="environment (--command)")
    call.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS", help="for the whole call")
    call.set_defaults(handler=_call)


def parse_answer(text: str) -> Answer:
    """One --elicit value.

    Raises:
        ConsoleError: naming the value and what is wrong.
    """
    action, sep, content = text.partition(":")
    if action not in ACTIONS or (sep and action != "accept"):
        raise ConsoleError(f"--elicit {text!r}: use accept, accept:{{JSON}}, decline, cancel or wait")
    if not sep:
        return Answer(action)
    try:
        return Answer(action, json.loads(content))
    except ValueError as exc:
        raise ConsoleError(f"--elicit {text!r}: the content is not JSON ({exc})") from None


def _call(settings: Settings, args: argparse.Namespace) -> int:
    unregistered = args.url is not None or args.command is not None
    if len(args.target) != (1 if unregistered else 2):
        raise ConsoleError("give SERVER TOOL, or TOOL with --url or --command")
    tool = args.target[-1]
    answers = [parse_answer(text) for text in args.elicit]
    try:
        arguments = json.loads(args.args)
    except ValueError as exc:
        raise ConsoleError(f"--args is not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConsoleError("--args must be a JSON object")
    target = resolve_target(
        settings,
        None if unregistered else args.target[0],
        url=args.url,
        command=args.command,
        headers=pairs(args.header),
        env=pairs(args.env),
        team=args.team,
    )
    try:
        outcome = anyio.run(_run, target, tool, arguments, answers, args.timeout)
    except (BaseExceptionGroup, TimeoutError) as exc:
        raise one_failure(exc, args.timeout) from None
    say(json.dumps({"status": outcome.status, "result": outcome.result, "error": outcome.error}))
    if outcome.status == CallStatus.AWAITING_INPUT:
        complain("error: no --elicit answer left for the question above; the call was left waiting")
        return UNANSWERED_EXIT
    if outcome.status != CallStatus.COMPLETED or (outcome.result or {}).get("isError"):
        return 1
    return 0


def one_failure(exc: BaseException, seconds: float) -> ConsoleError:
    """The error to print for a call that could not run: the console's own (a refused answer, an unknown
    tool, a server that cannot be reached) or the time running out; anything else is a bug and re-raised."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ConsoleError):
        return exc
    if isinstance(exc, TimeoutError):
        return ConsoleError(f"the call did not end within {seconds:g} s (--timeout)")
    raise exc


def resolve_target(
    settings: Settings,
    name: str | None,
    *,
    url: str | None = None,
    command: str | None = None,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    team: str | None = None,
) -> Target:
    """The server to call: the registered one named `name`, else the one at `url` or run by `command`
    (which may be on this machine).

    Raises:
        ConsoleError: see `_registered`.
    """
    if name is not None:
        return run_with_session(settings, lambda session: _registered(session, settings, name, team))
    if url is not None:
        return Target(
            UNREGISTERED, ServerSettings(transport="http", url=url, headers=headers or {}, internal=True)
        )
    return Target(
        UNREGISTERED, ServerSettings(transport="stdio", command=command or "", env=env or {}, internal=True)
    )


async def _registered(session: AsyncSession, settings: Settings, name: str, team: str | None) -> Target:
    """A registered server's settings with its values opened, to be registered again elsewhere.

    Raises:
        ConsoleError: no such server, several of that name, a disabled or per-user one, or values that
            cannot be opened.
    """
    query = (
        select(McpServer, Team.name).join(Team, Team.id == McpServer.team_id).where(McpServer.name == name)
    )
    if team is not None:
        query = query.where(Team.name == team)
    found = (await session.execute(query)).all()
    if not found:
        raise ConsoleError(f"no server {name!r}" + (f" in {team}" if team else ""))
    if len(found) > 1:
        raise ConsoleError(f"server {name!r} exists in {', '.join(sorted(t for _, t in found))}: give --team")
    server, _team = found[0]
    if server.disabled:
        raise ConsoleError(f"server {name!r} is disabled")
    if server.credential_mode in ("per_user", "oauth", "oauth_team"):
        raise ConsoleError(
            f"server {name!r} takes each user's own credential or an OAuth token: call it with --url and "
            "--header instead"
        )
    outbound = Outbound.of(settings)
    endpoint = endpoint_for(server, outbound)  # raises SecretMissing (a ConsoleError) without the key
    roots = await roots_for_server(session=session, server=server)  # a read: closing the session ends it
    copied = ServerSettings(
        transport=endpoint.transport,
        command=shlex.join(endpoint.command),
        url=endpoint.url,
        env=dict(endpoint.env),
        headers=dict(endpoint.headers),
        internal=not outbound.public_only(server),
        protocol_version=server.pinned_protocol or "",
    )
    return Target(name, copied, roots)


def answering(answers: list[Answer], report: Callable[[dict[str, Any]], None]) -> AnswerRound:
    """Answers each question, in order, from `answers` (shared by every round and call that uses it);
    each round is reported as a line with the server's `inputRequests` and what was answered. With no
    answer left for a question, the round is reported `unanswered` and the call stops there.

    `wait` leaves a link question to the server: one it pushed (MCP 2025-11-25) stays open until the
    server says the link's flow is done; on 2026-07-28 the call is retried (the link accepted) until the
    server stops asking for that link.

    Raises:
        ConsoleError: `wait` given for a question that is not a link.
    """
    queue = answers
    waited: set[str] = set()  # links left to a 2026-07-28 server, which asks for them again on each retry

    async def answer_round(waiting: Round) -> dict[str, Answer] | None:
        line: dict[str, Any] = {"round": waiting.n, "inputRequests": waiting.input_requests}
        again = {q.id for q in waiting.questions if not waiting.held and q.url in waited}
        if again:  # the server has not finished the link yet: give it time before the next retry
            await anyio.sleep(LINK_RETRY_SECONDS)
        asked = [q for q in waiting.questions if q.id not in again]
        given = {question.id: queue.pop(0) for question in asked[: len(queue)]}
        given.update(dict.fromkeys(again, Answer(WAIT)))
        if len(given) < len(waiting.questions):
            line["unanswered"] = [q.key for q in waiting.questions if q.id not in given]
        else:
            line["answers"] = {
                q.key: {"action": given[q.id].action, "content": given[q.id].content}
                for q in waiting.questions
            }
        report(line)
        if "answers" not in line:
            return None
        return {q.id: _waited(q, given[q.id], waiting.held, waited) for q in waiting.questions}

    return answer_round


def _waited(question: Elicitation, given: Answer, held: bool, waited: set[str]) -> Answer:
    """The answer to send for `given`: a `wait` on a link of a 2026-07-28 server is a retry (accept).

    Raises:
        ConsoleError: `wait` for a question that is not a link.
    """
    if given.action != WAIT:
        return given
    if question.mode != QuestionMode.URL or question.url is None:
        raise ConsoleError(f"--elicit wait: question {question.key!r} is not a link (mode url)")
    if held:
        return given
    waited.add(question.url)
    return Answer("accept")


@asynccontextmanager
async def throwaway(target: Target, seconds: float) -> AsyncIterator[ScriptedConsole]:
    """A scripted console with the target server registered, waiting for the server's answer to a request
    as long as a whole call may take."""
    # Its own key: values are sealed in the throwaway database as in any other.
    # One send: a server that cannot start says why at once (its stderr is this terminal's), not after
    # the retries a console gives a server that may come back.
    settings = {
        "secret_key": secrets.token_urlsafe(32),
        "request_timeout_seconds": seconds,
        "dispatch_attempts": 1,
    }
    # A server named before names ambiguous at the gateway were refused cannot be registered under that
    # name again; the throwaway console holds this one server, so any name does.
    name = target.name if server_name_problem(target.name) is None else UNREGISTERED
    async with scripted_console(**settings) as console:
        await console.seed(name, target.settings, target.roots)
        yield console


async def _run(
    target: Target, tool: str, arguments: dict[str, Any], answers: list[Answer], seconds: float
) -> Outcome:
    """Run the call, printing each round (as one JSON line) as it is answered."""
    answer_round = answering(list(answers), lambda line: say(json.dumps(line, ensure_ascii=False)))
    async with throwaway(target, seconds) as console:
        with anyio.fail_after(seconds):
            return await console.call(tool, arguments, answer_round)
