"""The MCP gateway: agents connect to the console as an MCP server (`/mcp`, `/mcp/<server>`), and every
request they make is a console call, under the team's policies."""
