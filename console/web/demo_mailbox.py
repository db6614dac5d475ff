"""The demo's mailbox page: each signed-in person reads the emails the demo console sent them (the demo's
own SMTP server keeps them, console/demo/mailbox.py). Only `console demo` has one."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import Response

from console.errors import NotFound
from console.identity.emails import email_choice
from console.web.auth import WebUser
from console.web.deps import DbSession, RuntimeDep
from console.web.templating import render

router = APIRouter(include_in_schema=False)
# The question pages a message links to, opened here as paths of this console whatever host it named.
QUESTION_PATH = re.compile(r"https?://[^\s/]+(/elicitations/[0-9a-f]{32})\b")


@router.get("/demo/mailbox")
async def mailbox(request: Request, session: DbSession, user: WebUser, runtime: RuntimeDep) -> Response:
    read = runtime.demo_mailbox
    if read is None:
        raise NotFound("only the demo has a mailbox")
    choice = await email_choice(session=session, user_id=user.viewer.user_id)
    messages = read(choice.address) if choice.address else []
    shown = [{"message": m, "links": QUESTION_PATH.findall(m.text)} for m in messages]
    return render(request, "demo/mailbox.html", {"user": user, "address": choice.address, "shown": shown})
