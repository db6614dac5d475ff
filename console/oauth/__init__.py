"""The console as an OAuth 2.1 client of MCP servers (MCP authorization): discovery, client identity,
the authorization code flow with PKCE, and people's grants, refreshed and revoked."""
