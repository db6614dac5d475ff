"""Team notes' sign-in page: who asks, what signing in grants it in words, and one field for a name.

A page of its own server, so it carries its own small stylesheet in the console's colours; every value
from the request or the client's registration is escaped.
"""

from __future__ import annotations

from html import escape

# What each scope lets the client do, as the person signing in reads it.
SCOPE_WORDS = {
    "notes:read": "read your notes",
    "offline_access": "stay connected: keep access until you disconnect, without asking you again",
}

STYLE = """
:root { --text: #1b1f24; --muted: #57606a; --border: #c9d1d9; --surface: #f4f6f8; --primary: #0a55c9;
  --radius: 6px; color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font: 1rem/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; color: var(--text); background: var(--surface); }
header { padding: 0.75rem 1rem; font-weight: 700; background: #fff; border-bottom: 1px solid var(--border); }
main { max-width: 28rem; margin: 2rem auto; padding: 1.5rem; background: #fff;
  border: 1px solid var(--border); border-radius: var(--radius); }
h1 { font-size: 1.4rem; line-height: 1.25; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
ul.scopes { margin: 0 0 1.25rem; padding-left: 1.25rem; }
ul.scopes li { margin-bottom: 0.25rem; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input[name="name"] { display: block; width: 100%; min-height: 2.75rem; padding: 0.5rem 0.625rem;
  font: inherit; border: 1px solid #6e7781; border-radius: var(--radius); margin-bottom: 1rem; }
button { min-height: 2.75rem; padding: 0.5rem 1.25rem; font: inherit; font-weight: 600; color: #fff;
  background: var(--primary); border: 2px solid var(--primary); border-radius: var(--radius);
  cursor: pointer; }
:focus-visible { outline: 3px solid var(--primary); outline-offset: 2px; }
.muted { color: var(--muted); font-size: 0.9rem; }
"""


def scope_line(scope: str) -> str:
    words = SCOPE_WORDS.get(scope)
    return f"<li><code>{escape(scope)}</code>{f' — {escape(words)}' if words else ''}</li>"


def sign_in_page(request_id: str, client_name: str | None, scopes: list[str]) -> str:
    """The page for a pending authorization request (its id goes back in the form)."""
    client = escape(client_name or "An application")
    granted = "".join(scope_line(scope) for scope in scopes)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>Sign in to Team notes</title><style>{STYLE}</style></head><body>"
        "<header>Team notes</header><main>"
        "<h1>Sign in to Team notes</h1>"
        f"<p class='client'><strong>{client}</strong> asks to use Team notes as you. "
        "Signing in allows it to:</p>"
        f"<ul class='scopes'>{granted}</ul>"
        "<form method='post' action='/login'>"
        f"<input type='hidden' name='request' value='{escape(request_id)}'>"
        "<label for='name'>Name</label><input id='name' name='name' required autocomplete='username'>"
        "<button type='submit'>Sign in</button></form>"
        "<p class='muted'>This is the demo's notes server: whatever name you give, you are signed in as.</p>"
        "</main></body></html>"
    )
