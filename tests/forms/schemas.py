"""The seed's deploy question, shared by the form tests."""

from __future__ import annotations

DEPLOY_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "environment": {
            "type": "string",
            "title": "Environment",
            "oneOf": [
                {"const": "staging", "title": "Staging"},
                {"const": "production", "title": "Production"},
            ],
            "default": "staging",
        },
        "confirm": {"type": "boolean", "title": "I have reviewed the changes"},
    },
    "required": ["environment", "confirm"],
}
