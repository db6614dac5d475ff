"""Benchmarks: the console against the direct MCP SDK client, side by side (python -m benchmarks)."""
