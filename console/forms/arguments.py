"""A tool's arguments checked against the tool's own `inputSchema` (any JSON Schema the server lists, not
only the form subset): what approvers of a gate change must still be arguments the tool takes."""

from __future__ import annotations

from typing import Any

MAX_ERRORS = 20


def argument_errors(schema: Any, arguments: Any) -> dict[str, str]:
    """Field errors (`arguments`, `arguments.<path>`) of arguments that the schema refuses; none when it
    takes them. A missing schema, or one that is itself not valid JSON Schema, refuses every change."""
    # Imported here: 3 MiB that a console whose gates never change arguments need not hold.
    from jsonschema import exceptions, validators
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    if not isinstance(arguments, dict):
        return {"arguments": "must be an object"}
    if not isinstance(schema, dict):
        return {"arguments": "the tool's inputSchema is not known, so its arguments cannot be changed"}
    validator_class = validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except exceptions.SchemaError:
        return {
            "arguments": "the tool's inputSchema is not valid JSON Schema, so its arguments cannot be changed"
        }
    errors: dict[str, str] = {}
    # An empty registry: a `$ref` to anywhere outside the schema is never fetched.
    checking = validator_class(schema, registry=Registry()).iter_errors(arguments)
    try:
        for error in checking:
            path = ".".join(str(part) for part in error.absolute_path)
            errors.setdefault(f"arguments.{path}" if path else "arguments", error.message[:300])
            if len(errors) >= MAX_ERRORS:
                break
    except Unresolvable as exc:
        return {"arguments": f"the tool's inputSchema refers to what it does not contain ({exc})"[:300]}
    return errors
