"""Talking MCP: endpoints, warm connections, one request at a time, replies classified."""

from console.mcp.endpoint import Complete, Endpoint, InputRequired, McpRequest, Reply
from console.mcp.pool import ConnectionPool

__all__ = ["Complete", "ConnectionPool", "Endpoint", "InputRequired", "McpRequest", "Reply"]
