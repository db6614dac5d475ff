"""A tool's arguments checked against the tool's own `inputSchema` (any JSON Schema the server lists, not
only the form subset): what an agent calls a tool with, and what approvers of a gate change, must be
arguments the tool takes. A server reads arguments that break its schema its own way (the official
SDK's servers read "500000" as the number 500000), so the console refuses them before anything is sent:
the policy must judge what the server will act on."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MAX_ERRORS = 20
MAX_MESSAGE = 300
KEPT_VALIDATORS = 256  # tools whose schema is compiled, newest use last


class _Validators:
    """Compiled validators by schema object. A schema is kept while its entry is, so its `id` cannot be
    taken by another object meanwhile; the listing a connection keeps hands the same object every call."""

    def __init__(self) -> None:
        self._kept: OrderedDict[int, tuple[Any, Validator | str]] = OrderedDict()

    def of(self, schema: dict[str, Any]) -> Validator | str:
        """The schema's validator, or why it has none."""
        found = self._kept.get(id(schema))
        if found is not None and found[0] is schema:
            self._kept.move_to_end(id(schema))
            return found[1]
        compiled = _compile(schema)
        self._kept[id(schema)] = (schema, compiled)
        while len(self._kept) > KEPT_VALIDATORS:
            self._kept.popitem(last=False)
        return compiled


_VALIDATORS = _Validators()


def _compile(schema: dict[str, Any]) -> Validator | str:
    # Imported here: 3 MiB that a console whose calls never reach a listed tool need not hold.
    from jsonschema import exceptions, validators
    from referencing import Registry

    validator_class = validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except exceptions.SchemaError:
        return "the tool's inputSchema is not valid JSON Schema"
    # An empty registry: a `$ref` to anywhere outside the schema is never fetched.
    return validator_class(schema, registry=Registry())


def _errors(validator: Validator, arguments: Any, prefix: str) -> dict[str, str]:
    from referencing.exceptions import Unresolvable

    errors: dict[str, str] = {}
    try:
        for error in validator.iter_errors(arguments):
            path = ".".join(str(part) for part in error.absolute_path)
            errors.setdefault(f"{prefix}.{path}" if path else prefix, error.message[:MAX_MESSAGE])
            if len(errors) >= MAX_ERRORS:
                break
    except Unresolvable as exc:
        return {prefix: f"the tool's inputSchema refers to what it does not contain ({exc})"[:MAX_MESSAGE]}
    return errors


def argument_errors(schema: Any, arguments: Any) -> dict[str, str]:
    """Field errors (`arguments`, `arguments.<path>`) of changed arguments that the schema refuses; none
    when it takes them. A missing schema, or one that is itself not valid JSON Schema, refuses every
    change."""
    if not isinstance(arguments, dict):
        return {"arguments": "must be an object"}
    if not isinstance(schema, dict):
        return {"arguments": "the tool's inputSchema is not known, so its arguments cannot be changed"}
    validator = _VALIDATORS.of(schema)
    if isinstance(validator, str):
        return {"arguments": f"{validator}, so its arguments cannot be changed"}
    return _errors(validator, arguments, "arguments")


def call_argument_errors(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    """Field errors (`params.arguments.<path>`) of a tool call's arguments that the tool's inputSchema
    refuses; none when it takes them, or when the schema is no valid JSON Schema (the server alone can
    judge what it takes then; a policy's conditions still fail closed on what they cannot read).

    An argument given as null counts as one not given, as MCP clients use it (custom headers, SEP-2243):
    it is still refused where the schema requires the argument, and conditions read it as missing."""
    validator = _VALIDATORS.of(schema)
    if isinstance(validator, str):
        return {}
    if isinstance(arguments, dict):
        arguments = {name: value for name, value in arguments.items() if value is not None}
    return _errors(validator, arguments, "params.arguments")
