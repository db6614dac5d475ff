"""Demo MCP server "connect": a `create_issue` tool that needs a third-party account, linked via URL mode.

One process serves two things on one port:

* the MCP endpoint `/mcp` (Streamable HTTP, protocol 2026-07-28, low-level `mcp.server.Server`), and
* stand-in pages of a third party, the "Example Tracker", under `/connect/...`, where a person
  signs in with the tracker's own password and so links their tracker account to their MCP user.

Every MCP request must carry `Authorization: Bearer <token>`; the token says which MCP user the
call is for (a request without a known token gets HTTP 401 before it reaches the MCP layer). Inside
the tool handler the user is read again from the HTTP request the SDK attaches to the request
context (`ctx.request`, a Starlette `Request`, on Streamable HTTP), so a handler never acts without
an identified user.

`create_issue(title)`:

* If the MCP user has a stored connection: `Issue created for <user>: <title>`.
* Otherwise it answers `input_required` with one URL-mode elicitation (key "connect") whose URL is
  this server's own `/connect/start?flow=<flow id>` page, plus a signed requestState that binds
  the user, the flow id and an expiry. The flow (flow id -> user) is remembered in memory.
* On the retry: a bad, foreign (another user's) or expired state -> JSON-RPC error -32602 with
  data {"reason": "invalid_request_state"}; decline/cancel -> "Not connected (decline)." /
  "Not connected (cancel)."; accept (the person only agreed to open the link) -> the issue if the
  connection now exists, else the same question again with the IDENTICAL URL (same flow id), so a
  client can tell it is the question it already got consent for.

The connect page enforces the protocol's same-user rule itself: the tracker user who signs in must
be the MCP user whose call created the flow; anyone else gets 403 ("This connect link was made for
another user.") and nothing is recorded. Flow ids carry an HMAC tag, so a guessed or edited link is
refused before any lookup. The link holds no user data.

Every request to a `/connect` path is counted, and `GET /stats` returns
`{"connect_requests": n, "connections": [users]}`, so tests can check that a client never fetched
the link on its own.

All state (flows, connections, counters) lives in memory: this is a demo, a restart forgets every
connection. A requestState issued before a restart still verifies (it is signed, not stored), and
its flow is re-registered for the user it names.

Run:
    CONNECT_STATE_KEY=<32+ characters> \\
    CONNECT_USERS='dev:tok-dev-123:pw-dev,lead:tok-lead-456:pw-lead' \\
        python -m console.demo.connect --port 8766

The server binds 127.0.0.1 unless `--host` says otherwise (port 0 picks a free port) and, once it
accepts connections, prints exactly one line to stdout: `listening on http://<host>:<port>/mcp`.
Links point at the host and port the MCP client used (its Host header), or at `--public-url`
(e.g. `https://tracker-demo.example`) when the server sits behind a proxy. When bound to a loopback
address, the SDK's DNS-rebinding check admits only loopback Host headers (plus `--public-url`'s).

Environment:
    CONNECT_STATE_KEY   HMAC key for requestState and for connect-link flow ids, at least 32
                        characters; without it the server refuses to start (exit status 2).
    CONNECT_USERS       comma-separated `name:token:password` triples: the MCP bearer token that
                        identifies `name`, and the password `name` signs in with on the connect page.
                        Required (exit status 2 if missing or malformed).
    CONNECT_STATE_TTL   seconds an issued requestState / flow stays valid (default 3600).

Modules: `config` (the environment, the in-memory store), `state` (signed requestState and flow ids),
`tool` (the MCP server and its tool), `pages` (the tracker's pages) and `server` (the one ASGI app that
serves both, and the command line).
"""
