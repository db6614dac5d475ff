r"""Conditions on a tool call's arguments: the language of a policy rule's `--when`.

A rule with a condition applies only to calls whose arguments (a JSON object) make it true. `parse`
refuses a bad condition when the rule is saved, saying where the problem is; `Condition.matches` never
raises, whatever the arguments.

    environment == "production"
    amount > 1000 and currency in ["EUR", "USD"]
    not (path matches "build/*" or user.roles contains "admin")

Values
    "text" 'text'      strings, with the escapes \" \' \\ \n \t \uXXXX
    12  -3.5  1e6      numbers; 1 and 1.0 are the same number, true is not a number
    true false null
    [v, v, ...]        a list of the values above (no arguments inside), possibly empty
    name               the argument `name`, then `.key`, `["any key"]` and `[0]` step into objects and
                       lists; `arguments.name` and `arguments["x-y"]` name arguments too, and are how
                       to reach one named like a reserved word (`arguments["and"]`). A path that leads
                       nowhere (a missing key, an index past the end, a step into a string) is null.

Comparisons
    a == b, a != b     JSON equality: strings exactly, numbers by value, lists and objects item by item
    < <= > >=          number with number or string with string
    a in b             a is an item of list b, or string a is part of string b
    a not in b         exactly `not (a in b)`
    a contains b       b is an item of list a, or string b is part of string a
    a matches "p"      string a fits the shell-style pattern p, written in quotes (* ? [abc] [!abc]);
                       case-sensitive

Undecided
    A comparison cannot be decided when an argument it reads is missing or of another kind than the
    comparison needs: `amount > 1000` for "500000", [500000], true or no amount; `env == "prod"` for
    ["prod"] or no env (`env == null` is decided: it asks whether env is missing); `env in ["a", "b"]`
    for a number; `path matches "x*"` or `tags contains "x"` for what is neither text nor a list. A
    server may read such a value as one that meets the condition ("500000" as 500000), so the verdict is
    undecided, never false, and the policy treats the rule as strictly as it can (policies/rules.py).
    Two values written in the condition itself are always decided.

Logic
    `not`, `and`, `or` and parentheses, binding in that order: `not a == 1 and b or c` is
    `((not (a == 1)) and b) or c`, with three verdicts (Kleene's logic): `not` keeps undecided,
    `and` is false if any term is false and else undecided if any is, `or` is true if any term is
    true and else undecided if any is. A value on its own is a condition that holds when the value is
    true and fails when it is false: `dry_run` is undecided for 1, "yes" or a missing argument.

Reserved words: true false null and or not in matches contains arguments. Python's spellings
(True False None && || ! =) are refused with a hint. Limits: 1000 characters, 32 levels of nesting
(parentheses, `not`, lists), 100 comparisons (a value on its own counts as one), strings of 500
characters, lists of 100 items.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, NoReturn

MAX_LENGTH = 1000
MAX_NESTING = 32
MAX_COMPARISONS = 100
MAX_STRING = 500
MAX_LIST_ITEMS = 100

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_OPERATORS = ("==", "!=", "<=", ">=", "<", ">", "(", ")", "[", "]", ",", ".")
_LITERAL_WORDS: dict[str, Any] = {"true": True, "false": False, "null": None}
_KEYWORDS = frozenset({"and", "or", "not", "in", "matches", "contains", "arguments", *_LITERAL_WORDS})
_PYTHON_SPELLINGS = {"True": "true", "False": "false", "None": "null", "&&": "and", "||": "or", "&": "and"}
_PYTHON_SPELLINGS |= {"|": "or", "!": "not", "=": "=="}
_KINDS: tuple[tuple[tuple[type, ...], str], ...] = (
    ((bool,), "boolean"),  # before "number": True is an int to Python, never a number here
    ((int, float), "number"),
    ((str,), "string"),
    ((list, tuple), "list"),
    ((Mapping,), "object"),
)
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t"}


class ConditionError(ValueError):
    """A condition outside the language; `position` is the 0-based offset of the problem in the text."""

    def __init__(self, message: str, position: int, text: str) -> None:
        self.message = message
        self.position = position
        start, end = max(0, position - 30), position + 10
        excerpt = ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
        super().__init__(f"{message} at column {position + 1}: {excerpt!r}")


# The tree `parse` builds: a path or a literal on either side of a comparison, and the logic above them.
@dataclass(frozen=True)
class Path:
    steps: tuple[str | int, ...]


@dataclass(frozen=True)
class Literal:
    value: Any  # None, bool, int, float, str, or a tuple of such values


@dataclass(frozen=True)
class Comparison:
    left: Operand
    operator: str
    right: Operand


@dataclass(frozen=True)
class IsTrue:
    operand: Operand


@dataclass(frozen=True)
class Not:
    operand: Expression


@dataclass(frozen=True)
class Junction:
    word: str  # "and" or "or"
    terms: tuple[Expression, ...]


Operand = Path | Literal
Expression = Comparison | IsTrue | Not | Junction
Verdict = bool | None  # None: undecided


@dataclass(frozen=True)
class Condition:
    """A parsed condition; `text` is the source as written, without surrounding whitespace."""

    text: str
    expression: Expression

    def verdict(self, arguments: Mapping[str, Any]) -> Verdict:
        """Whether a call with these arguments meets the condition: None when that cannot be decided on
        the values it finds (arguments not an object count as {})."""
        given: object = arguments
        return _evaluate(self.expression, given if isinstance(given, Mapping) else {})

    def describe(self) -> str:
        """The condition as a person reads it: single spaces, double quotes, no needless parentheses."""
        return _describe(self.expression)


def parse(text: str) -> Condition:
    """Read a condition written in the language above.

    Raises:
        ConditionError: for the first problem in the text, with its position.
    """
    source = text.strip()
    if not source:
        raise ConditionError("the condition is empty", 0, text)
    if len(source) > MAX_LENGTH:
        position = len(text) - len(text.lstrip()) + MAX_LENGTH
        raise ConditionError(f"the condition is longer than {MAX_LENGTH} characters", position, text)
    return Condition(source, _Parser(text).parse())


@dataclass(frozen=True)
class _Token:
    kind: str  # "name", "string", "number", "op" or "end"
    text: str  # as written; only names and operators can equal a keyword or an operator
    position: int
    value: Any = None


def _tokenize(text: str) -> Iterator[_Token]:
    index = 0
    while index < len(text):
        if text[index].isspace():
            index += 1
        elif text[index] in "\"'":
            value, end = _scan_string(text, index)
            yield _Token("string", text[index:end], index, value)
            index = end
        elif number := _NUMBER.match(text, index):
            exact = float(number.group()) if number.group(1) or number.group(2) else int(number.group())
            if exact in (math.inf, -math.inf):
                raise ConditionError("this number is too large", index, text)
            yield _Token("number", number.group(), index, exact)
            index = number.end()
        elif name := _NAME.match(text, index):
            yield _Token("name", name.group(), index)
            index = name.end()
        elif symbol := next((op for op in _OPERATORS if text.startswith(op, index)), None):
            yield _Token("op", symbol, index)
            index += len(symbol)
        elif python := next((op for op in _PYTHON_SPELLINGS if text.startswith(op, index)), None):
            raise ConditionError(f"write {_PYTHON_SPELLINGS[python]!r} instead of {python!r}", index, text)
        else:
            raise ConditionError(f"unexpected character {text[index]!r}", index, text)
    while True:
        yield _Token("end", "", len(text))


def _scan_string(text: str, start: int) -> tuple[str, int]:
    chars: list[str] = []
    index = start + 1
    while index < len(text) and text[index] != text[start]:
        code, digits = text[index + 1 : index + 2], text[index + 2 : index + 6]
        if text[index] != "\\":
            chars.append(text[index])
            index += 1
        elif code in _ESCAPES:
            chars.append(_ESCAPES[code])
            index += 2
        elif code == "u" and len(digits) == 4 and all(digit in string.hexdigits for digit in digits):
            chars.append(chr(int(digits, 16)))
            index += 6
        else:
            raise ConditionError(f"unknown escape {text[index : index + 2]!r}", index, text)
    if index == len(text):
        raise ConditionError("this string is never closed", start, text)
    try:  # a character beyond U+FFFF is written as two \u escapes, as in JSON
        value = "".join(chars).encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise ConditionError("a \\u escape names half a character", start, text) from None
    if len(value) > MAX_STRING:
        raise ConditionError(f"a string is longer than {MAX_STRING} characters", start, text)
    return value, index + 1


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.lookahead: list[_Token] = []
        self.depth = 0
        self.comparisons = 0

    def parse(self) -> Expression:
        expression = self.junction("or")
        if self.peek().kind != "end":
            self.fail("'and', 'or' or the end", self.peek())
        return expression

    def junction(self, word: str) -> Expression:
        def term() -> Expression:
            return self.junction("and") if word == "or" else self.negation()

        terms = [term()]
        while self.accept(word):
            terms.append(term())
        return terms[0] if len(terms) == 1 else Junction(word, tuple(terms))

    def negation(self) -> Expression:
        token = self.peek()
        if self.accept("not"):
            with self.nested(token):
                return Not(self.negation())
        if not self.accept("("):
            return self.comparison()
        with self.nested(token):
            inner = self.junction("or")
        if not self.accept(")"):
            self.fail("'and', 'or' or ')'", self.peek())
        return inner

    def comparison(self) -> Expression:
        self.comparisons += 1
        if self.comparisons > MAX_COMPARISONS:
            self.refuse(f"there are more than {MAX_COMPARISONS} comparisons", self.peek())
        left = self.operand()
        operator = self.advance().text if self.peek().text in _COMPARATORS else None
        if operator is None and self.peek().text == "not" and self.peek(1).text == "in":
            operator = self.advance().text + " " + self.advance().text
        if operator is None:
            return IsTrue(left)
        token = self.peek()
        right = self.operand()
        if operator == "matches" and not (isinstance(right, Literal) and isinstance(right.value, str)):
            self.fail("a pattern in quotes", token)  # so arguments never supply a pattern to compile
        return Comparison(left, operator, right)

    def operand(self) -> Operand:
        token = self.peek()
        if token.kind != "name" or token.text in _LITERAL_WORDS:
            return Literal(self.literal("a value"))
        path = self.path()
        if self.peek().text == "(":
            self.refuse(f"conditions have no functions ({token.text!r} cannot be called)", token)
        return path

    def literal(self, expected: str) -> Any:
        token = self.advance()
        if token.kind in ("string", "number"):
            return token.value
        if token.kind == "name" and token.text in _LITERAL_WORDS:
            return _LITERAL_WORDS[token.text]
        if token.text != "[":
            self.fail(expected, token)
        items: list[Any] = []
        with self.nested(token):
            while not self.accept("]"):
                if items and not self.accept(","):
                    self.fail("',' or ']'", self.peek())
                if len(items) == MAX_LIST_ITEMS:
                    self.refuse(f"a list has more than {MAX_LIST_ITEMS} items", self.peek())
                items.append(self.literal("a literal value (a list holds no arguments)"))
        return tuple(items)

    def path(self) -> Path:
        head = self.advance()
        if head.text in _PYTHON_SPELLINGS:
            self.refuse(f"write {_PYTHON_SPELLINGS[head.text]!r} instead of {head.text!r}", head)
        if head.text in _KEYWORDS - {"arguments"}:
            self.fail("a value", head)
        steps: list[str | int] = [] if head.text == "arguments" else [head.text]
        while self.peek().text in (".", "["):
            if self.advance().text == ".":
                name = self.advance()
                if name.kind != "name":
                    self.fail("a name after '.'", name)
                steps.append(name.text)
                continue
            key = self.advance()
            if key.kind != "string" and not (type(key.value) is int and key.value >= 0):
                self.fail("a quoted key or an index from 0", key)
            steps.append(key.value)
            if not self.accept("]"):
                self.fail("']'", self.peek())
        if not steps:
            self.fail("'.' or '[' after 'arguments'", self.peek())
        return Path(tuple(steps))

    def peek(self, ahead: int = 0) -> _Token:
        while len(self.lookahead) <= ahead:
            self.lookahead.append(next(self.tokens))
        return self.lookahead[ahead]

    def advance(self) -> _Token:
        self.peek()
        return self.lookahead.pop(0)

    def accept(self, text: str) -> bool:
        found = self.peek().text == text
        if found:
            self.advance()
        return found

    @contextmanager
    def nested(self, token: _Token) -> Iterator[None]:
        if self.depth == MAX_NESTING:
            self.refuse(f"the condition nests deeper than {MAX_NESTING} levels", token)
        self.depth += 1
        yield
        self.depth -= 1

    def fail(self, expected: str, token: _Token) -> NoReturn:
        found = {"end": "the end", "string": "a string"}.get(token.kind, repr(token.text))
        self.refuse(f"expected {expected}, found {found}", token)

    def refuse(self, message: str, token: _Token) -> NoReturn:
        raise ConditionError(message, token.position, self.text)


def _evaluate(node: Expression, arguments: Mapping[str, Any]) -> Verdict:
    if isinstance(node, Comparison):
        left, right = _resolve(node.left, arguments), _resolve(node.right, arguments)
        if node.operator in ("==", "!=") and Literal(None) in (node.left, node.right):
            return _same(left, right) is (node.operator == "==")  # asks whether a value is missing
        verdict = _COMPARATORS[node.operator](left, right)
        if verdict is None and not isinstance(node.left, Path) and not isinstance(node.right, Path):
            return False  # two values written in the condition: its author's choice, always decided
        return verdict
    if isinstance(node, IsTrue):
        value = _resolve(node.operand, arguments)
        if isinstance(value, bool):
            return value
        return None if isinstance(node.operand, Path) else False
    if isinstance(node, Not):
        inner = _evaluate(node.operand, arguments)
        return None if inner is None else not inner
    verdicts = [_evaluate(term, arguments) for term in node.terms]
    decisive = node.word == "or"  # the verdict that settles a junction: true for `or`, false for `and`
    if decisive in verdicts:
        return decisive
    return None if None in verdicts else not decisive


def _resolve(operand: Operand, arguments: Mapping[str, Any]) -> Any:
    if isinstance(operand, Literal):
        return operand.value
    value: Any = arguments
    for step in operand.steps:
        if isinstance(step, str) and isinstance(value, Mapping):
            value = value.get(step)
        elif isinstance(step, int) and isinstance(value, list | tuple) and step < len(value):
            value = value[step]
        else:
            return None
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return next((kind for types, kind in _KINDS if isinstance(value, types)), "other")


def _equal(left: Any, right: Any) -> Verdict:
    """JSON equality; undecided when the two are of different kinds (a missing value is null)."""
    kinds = {_kind(left), _kind(right)}
    if len(kinds) > 1 or "other" in kinds:
        return None
    return _same(left, right)


def _same(left: Any, right: Any) -> bool:
    pending = [(left, right)]  # a stack rather than recursion: arguments may nest arbitrarily deep
    while pending:
        a, b = pending.pop()
        kind = _kind(a)
        if kind != _kind(b) or kind == "other":
            return False
        if kind == "list" and len(a) == len(b):
            pending.extend(zip(a, b, strict=True))
        elif kind == "object" and a.keys() == b.keys():
            pending.extend((a[key], b[key]) for key in a)
        elif kind in ("list", "object") or a != b:
            return False
    return True


def _unequal(left: Any, right: Any) -> Verdict:
    equal = _equal(left, right)
    return None if equal is None else not equal


def _holds(container: Any, item: Any) -> Verdict:
    """Whether `item` is an item of the list `container`, or a part of the text `container`; undecided
    when the item is of a kind no item of a list literal has, or the container is neither."""
    if isinstance(container, list | tuple):
        if any(_same(element, item) for element in container):
            return True
        kinds = {_kind(element) for element in container}
        return False if not container or _kind(item) in kinds or isinstance(container, list) else None
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    return None


def _lacks(container: Any, item: Any) -> Verdict:
    held = _holds(container, item)
    return None if held is None else not held


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Verdict]:
    def verdict(left: Any, right: Any) -> Verdict:
        if _kind(left) in ("number", "string") and _kind(left) == _kind(right):
            return compare(left, right)
        return None

    return verdict


def _matches(left: Any, right: Any) -> Verdict:
    if isinstance(left, str) and isinstance(right, str):
        return fnmatchcase(left, right)
    return None


_COMPARATORS: dict[str, Callable[[Any, Any], Verdict]] = {
    "==": _equal,
    "!=": _unequal,
    "<": _ordered(lambda left, right: left < right),
    "<=": _ordered(lambda left, right: left <= right),
    ">": _ordered(lambda left, right: left > right),
    ">=": _ordered(lambda left, right: left >= right),
    "in": lambda left, right: _holds(right, left),
    "not in": lambda left, right: _lacks(right, left),
    "contains": _holds,
    "matches": _matches,
}


def _describe(node: Expression | Operand) -> str:
    if isinstance(node, Comparison):
        return f"{_describe(node.left)} {node.operator} {_describe(node.right)}"
    if isinstance(node, IsTrue):
        return _describe(node.operand)
    if isinstance(node, Not):
        inner = _describe(node.operand)
        return f"not ({inner})" if isinstance(node.operand, Junction) else f"not {inner}"
    if isinstance(node, Junction):
        parts = (
            f"({_describe(t)})" if isinstance(t, Junction) and t.word == "or" else _describe(t)
            for t in node.terms
        )
        return f" {node.word} ".join(parts)
    if isinstance(node, Literal):
        return _describe_value(node.value)
    first = node.steps[0]
    head = first if isinstance(first, str) and _is_plain(first) else "arguments" + _describe_step(first)
    return head + "".join(_describe_step(step) for step in node.steps[1:])


def _describe_step(step: str | int) -> str:
    if isinstance(step, int):
        return f"[{step}]"
    return f".{step}" if _is_plain(step) else f"[{_describe_value(step)}]"


def _is_plain(key: str) -> bool:
    return bool(_NAME.fullmatch(key)) and key not in _KEYWORDS and key not in _PYTHON_SPELLINGS


def _describe_value(value: Any) -> str:
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
        return '"' + "".join(f"\\u{ord(c):04x}" if _is_control(c) else c for c in escaped) + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_describe_value(item) for item in value) + "]"
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    return repr(value)


def _is_control(char: str) -> bool:
    return ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
