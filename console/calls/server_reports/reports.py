"""What a server reports while a request is out, kept on the call: its progress and its log messages."""

from __future__ import annotations

from dataclasses import dataclass

from console.calls.models import Call
from console.calls.server_reports.logs import LogRecorder
from console.calls.server_reports.progress import ProgressRecorder


@dataclass(frozen=True)
class Reports:
    progress: ProgressRecorder
    logs: LogRecorder

    def none_arrived(self) -> bool:
        """Whether the server reported nothing while the request was out."""
        return self.progress.latest is None and not self.logs.unwritten and not self.logs.lost

    def keep(self, call: Call) -> bool:
        """Put what arrived since the last write on the call (its row locked by the caller's transaction);
        whether anything changed."""
        kept_progress = self.progress.keep(call)
        kept_logs = self.logs.keep(call)
        return kept_progress or kept_logs
