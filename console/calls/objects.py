"""The call object as agents see it: the API's answer and the body of a callback are this one model, so
the two never drift apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from console.calls.models import Call


class AskedLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def message(self) -> str: ...


def kind_of(mode: str) -> Literal["elicitation", "gate", "connect"]:
    """Who asks: the console (a gate, a connect) or the server."""
    return mode if mode in ("gate", "connect") else "elicitation"  # type: ignore[return-value]


class PendingOut(BaseModel):
    id: str
    key: str
    kind: Literal["elicitation", "gate", "connect"] = Field(
        description='"gate": the console asks before sending (a policy gate); "connect": the owner must '
        'connect their account at the server (OAuth) before it is sent; "elicitation": the server asks'
    )
    mode: Literal["form", "url", "gate", "sampling", "connect"]
    message: str
    answer_url: str


class ProgressOut(BaseModel):
    progress: float | None
    total: float | None = None
    message: str | None = None
    at: datetime


class LogOut(BaseModel):
    level: str
    logger: str | None = None
    message: str = Field(description="the server's data as text (JSON when it was not a string), capped")
    at: datetime


class CallOut(BaseModel):
    id: str
    run_id: str
    server: str
    method: str
    params: Any
    status: str
    round: int
    result: Any = None
    error: Any = None
    pending: list[PendingOut]
    progress: ProgressOut | None = Field(
        default=None, description="the latest progress the server reported for the call's requests"
    )
    logs: list[LogOut] = Field(
        default_factory=list,
        description="the newest log messages the server sent while the call's requests were out (at most "
        "50, oldest first; CONSOLE_CALL_LOG_LEVEL)",
    )
    logs_dropped: int = Field(default=0, description="older log messages no longer kept")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, call: Call, *, server: str, pending: Sequence[AskedLike], base_url: str) -> CallOut:
        """The call with its pending questions (each with the page it is answered on)."""
        return cls(
            id=call.id,
            run_id=call.run_id,
            server=server,
            method=call.method,
            params=json.loads(call.params_json),
            status=call.status,
            round=call.round,
            result=json.loads(call.result_json) if call.result_json else None,
            error=json.loads(call.error_json) if call.error_json else None,
            pending=[
                PendingOut(
                    id=p.id,
                    key=p.key,
                    kind=kind_of(p.mode),
                    mode=p.mode,  # type: ignore[arg-type]  # stored as one of its Literal's values
                    message=p.message,
                    answer_url=f"{base_url}/elicitations/{p.id}",
                )
                for p in pending
            ],
            progress=ProgressOut.model_validate(call.progress) if call.progress_json else None,
            logs=[LogOut.model_validate(entry) for entry in call.logs["entries"]],
            logs_dropped=call.logs["dropped"],
            created_at=call.created_at,
            updated_at=call.updated_at,
        )
