#!/bin/sh
# The MCP Inspector's command line (Node 22) lists the console's tools and calls one through its gateway.
# It speaks 2026-07-28 (--protocol-era modern): a call that waits for a person is then a task it polls,
# so its fixed 60 s request timeout does not cut the wait short.
#
#   npm install -g @modelcontextprotocol/inspector
#   CONSOLE_MCP_URL=http://127.0.0.1:8000/mcp CONSOLE_TOKEN=mcpc_... \
#   TOOL=deployer__deploy TOOL_ARG=service=auth-service sh gateway_inspector.sh
set -eu
mcp-inspector --cli "$CONSOLE_MCP_URL" --transport http --protocol-era modern \
  --header "Authorization: Bearer $CONSOLE_TOKEN" --method tools/list
mcp-inspector --cli "$CONSOLE_MCP_URL" --transport http --protocol-era modern \
  --header "Authorization: Bearer $CONSOLE_TOKEN" --method tools/call --tool-name "$TOOL" --tool-arg "$TOOL_ARG"
