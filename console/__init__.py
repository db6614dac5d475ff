"""The approval console: parks MCP elicitations and approvals for people, and resumes the calls."""

__version__ = "0.1.0"  # the one place the release is named (pyproject.toml reads it; CHANGELOG.md tells it)
