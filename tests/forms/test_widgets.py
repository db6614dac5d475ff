import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from jinja2 import Environment, FileSystemLoader

from console.forms import FieldSpec, Widget, build_widgets, defaults, form_to_content, parse_schema
from tests.forms.schemas import DEPLOY_SCHEMA

REPO = Path(__file__).resolve().parents[2]
ENV = Environment(loader=FileSystemLoader(REPO / "templates"), autoescape=True)
FIELDS_PAGE = ENV.from_string(
    '{% from "_macros/forms.html" import render_fields %}{{ render_fields(widgets) }}'
)

DEPLOY = parse_schema(DEPLOY_SCHEMA)

EVERY_KIND = parse_schema(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 20},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
            "ratio": {"type": "number", "minimum": 0, "maximum": 1},
            "confirm": {"type": "boolean"},
            "environment": {"type": "string", "enum": ["staging", "production"]},
            "region": {"type": "string", "enum": [f"r{i}" for i in range(8)]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}},
        },
        "required": ["name", "environment"],
    }
)


def single(prop: dict[str, object], required: bool = False) -> tuple[FieldSpec, ...]:
    return parse_schema({"type": "object", "properties": {"f": prop}, "required": ["f"] if required else []})


def render(widgets: Sequence[Widget]) -> BeautifulSoup:
    return BeautifulSoup(FIELDS_PAGE.render(widgets=widgets), "html.parser")


def render_single(prop: dict[str, object], required: bool = False) -> BeautifulSoup:
    return render(build_widgets(single(prop, required)))


def one(soup: BeautifulSoup | Tag, selector: str) -> Tag:
    tag = soup.select_one(selector)
    assert tag is not None, f"nothing matches {selector!r}"
    return tag


def attr(soup: BeautifulSoup, selector: str, name: str) -> str | None:
    value = one(soup, selector).get(name)
    assert value is None or isinstance(value, str)
    return value


def submit(soup: BeautifulSoup) -> dict[str, list[str]]:
    """What a browser would post for the rendered fields as they stand."""
    form: dict[str, list[str]] = {}
    for control in soup.select("input, select"):
        if control.name == "select":
            option = control.select_one("option[selected]") or one(control, "option")
            value = option["value"]
        elif control.get("type") in ("checkbox", "radio") and not control.has_attr("checked"):
            continue
        else:
            value = control["value"]
        form.setdefault(str(control["name"]), []).append(str(value))
    return form


@pytest.mark.parametrize(
    ("format_", "input_type"),
    [(None, "text"), ("email", "email"), ("uri", "url"), ("date", "date"), ("date-time", "datetime-local")],
)
def test_string_format_chooses_the_input_type(format_: str | None, input_type: str) -> None:
    prop: dict[str, object] = {"type": "string"} if format_ is None else {"type": "string", "format": format_}
    assert attr(render_single(prop), "input#field-0", "type") == input_type


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"minLength": 3}, {"minlength": "3", "maxlength": None}),
        ({"maxLength": 40}, {"minlength": None, "maxlength": "40"}),
        ({"minLength": 0, "maxLength": 0}, {"minlength": "0", "maxlength": "0"}),
    ],
)
def test_string_length_limits_become_minlength_and_maxlength(
    prop: dict[str, object], expected: dict[str, str | None]
) -> None:
    soup = render_single({"type": "string", **prop})
    assert {name: attr(soup, "input#field-0", name) for name in expected} == expected


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "number", "minimum": 0.5, "maximum": 2.5}, ("0.5", "2.5", "any")),
        ({"type": "number", "minimum": -3}, ("-3", None, "any")),
        ({"type": "number"}, (None, None, "any")),
        ({"type": "integer", "minimum": 1, "maximum": 10}, ("1", "10", "1")),
        ({"type": "integer", "maximum": 7.0}, (None, "7", "1")),
    ],
)
def test_number_bounds_become_min_max_and_step(
    prop: dict[str, object], expected: tuple[str | None, str | None, str]
) -> None:
    soup = render_single(prop)
    assert attr(soup, "input#field-0", "type") == "number"
    assert tuple(attr(soup, "input#field-0", name) for name in ("min", "max", "step")) == expected


def test_integer_with_fractional_bounds_allows_the_whole_numbers_between_them() -> None:
    """The browser counts steps from `min`, so min=0.5 with step=1 would reject every whole number."""
    soup = render_single({"type": "integer", "minimum": 0.5, "maximum": 9.5})
    assert (attr(soup, "#field-0", "min"), attr(soup, "#field-0", "max")) == ("1", "9")


def test_boolean_becomes_a_checkbox_that_posts_true() -> None:
    soup = render_single({"type": "boolean", "title": "Ship it"})
    checkbox = one(soup, "input#field-0")
    assert (checkbox["type"], checkbox["name"], checkbox["value"]) == ("checkbox", "f0", "true")
    assert not checkbox.has_attr("checked")
    assert one(soup, 'label[for="field-0"]').get_text(strip=True) == "Ship it"


@pytest.mark.parametrize(
    ("prop", "choices"),
    [
        ({"type": "string", "enum": ["red", "green"]}, [("red", "red"), ("green", "green")]),
        (
            {
                "type": "string",
                "oneOf": [{"const": "s", "title": "Staging"}, {"const": "p", "title": "Prod"}],
            },
            [("s", "Staging"), ("p", "Prod")],
        ),
        (
            {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
            [("r", "Red"), ("g", "Green")],
        ),
    ],
    ids=["enum", "oneOf", "enumNames"],
)
def test_single_select_becomes_labelled_radio_buttons(
    prop: dict[str, object], choices: list[tuple[str, str]]
) -> None:
    soup = render_single(prop, required=True)
    group = one(soup, "fieldset#field-0")
    radios = group.select('input[type="radio"]')
    rendered = [(str(r["value"]), one(soup, f'label[for="{r["id"]}"]').get_text(strip=True)) for r in radios]
    assert rendered == choices
    assert {r["name"] for r in radios} == {"f0"}
    assert one(group, "legend").get_text(strip=True).startswith("f")


@pytest.mark.parametrize(("count", "kind"), [(1, "radio"), (5, "radio"), (6, "select"), (40, "select")])
def test_more_than_five_options_become_a_select(count: int, kind: str) -> None:
    soup = render_single({"type": "string", "enum": [f"o{i}" for i in range(count)]}, required=True)
    if kind == "radio":
        assert len(soup.select('fieldset#field-0 input[type="radio"]')) == count
        assert soup.select("select") == []
    else:
        assert [option["value"] for option in soup.select("select#field-0 option")][1:] == [
            f"o{i}" for i in range(count)
        ]


@pytest.mark.parametrize(
    ("required", "default", "blank"),
    [(True, None, True), (False, None, True), (False, "o3", True), (True, "o3", False)],
)
def test_select_offers_an_empty_choice_unless_required_with_a_default(
    required: bool, default: str | None, blank: bool
) -> None:
    prop: dict[str, object] = {"type": "string", "enum": [f"o{i}" for i in range(7)]}
    if default is not None:
        prop["default"] = default
    first = one(render_single(prop, required), "select#field-0 option")
    assert (first["value"] == "" and first.get_text() == "Choose…") is blank


@pytest.mark.parametrize(("required", "blank"), [(True, False), (False, True)])
def test_optional_radio_group_offers_no_answer_to_take_a_choice_back(required: bool, blank: bool) -> None:
    soup = render_single({"type": "string", "enum": ["a", "b"], "default": "a"}, required)
    assert [r["value"] for r in soup.select('input[type="radio"]')] == ["a", "b", ""][: 3 if blank else 2]
    if blank:
        assert one(soup, 'label[for="field-0-none"]').get_text() == "No answer"


@pytest.mark.parametrize(
    "items",
    [
        {"type": "string", "enum": ["x", "y"]},
        {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
    ],
    ids=["items.enum", "items.anyOf"],
)
def test_multi_select_becomes_a_group_of_checkboxes(items: dict[str, object]) -> None:
    soup = render_single({"type": "array", "items": items})
    boxes = soup.select('fieldset#field-0 input[type="checkbox"]')
    assert [(b["name"], b["value"]) for b in boxes] == [("f0", "x"), ("f0", "y")]
    labels = [one(soup, f'label[for="{b["id"]}"]').get_text() for b in boxes]
    assert labels == (["x", "y"] if "enum" in items else ["Ex", "Why"])


@pytest.mark.parametrize(
    ("limits", "hint", "data"),
    [
        ({"minItems": 1}, "Choose at least 1.", ("1", None)),
        ({"maxItems": 2}, "Choose at most 2.", (None, "2")),
        ({"minItems": 1, "maxItems": 2}, "Choose 1 to 2.", ("1", "2")),
        ({"minItems": 2, "maxItems": 2}, "Choose exactly 2.", ("2", "2")),
        ({"minItems": 0, "maxItems": 3}, "Choose at most 3.", ("0", "3")),
        ({}, None, (None, None)),
    ],
)
def test_item_limits_are_shown_as_a_hint_and_as_data_attributes(
    limits: dict[str, object], hint: str | None, data: tuple[str | None, str | None]
) -> None:
    soup = render_single({"type": "array", "items": {"enum": ["x", "y", "z"]}, **limits})
    group = one(soup, "fieldset#field-0")
    assert (group.get("data-min-items"), group.get("data-max-items")) == data
    hint_tag = soup.select_one("#field-0-hint")
    assert (None if hint_tag is None else hint_tag.get_text()) == hint
    assert group.get("aria-describedby") == (None if hint is None else "field-0-hint")


@pytest.mark.parametrize(
    ("prop", "control", "caption"),
    [
        ({"type": "string"}, "input#field-0", 'label[for="field-0"]'),
        ({"type": "string", "format": "date"}, "input#field-0", 'label[for="field-0"]'),
        ({"type": "integer"}, "input#field-0", 'label[for="field-0"]'),
        ({"type": "string", "enum": ["a", "b"]}, "input#field-0-0", "fieldset#field-0 > legend"),
        ({"type": "string", "enum": list("abcdef")}, "select#field-0", 'label[for="field-0"]'),
        ({"type": "array", "items": {"enum": ["a"]}, "minItems": 1}, None, "fieldset#field-0 > legend"),
    ],
)
def test_required_fields_are_marked_and_natively_required(
    prop: dict[str, object], control: str | None, caption: str
) -> None:
    soup = render_single({**prop, "title": "Pick"}, required=True)
    mark = one(soup, f"{caption} .required")
    assert (mark.get_text(), mark["aria-hidden"]) == ("*", "true")
    assert one(soup, f"{caption} .visually-hidden").get_text(strip=True) == "(required)"
    if control is not None:
        assert one(soup, control).has_attr("required")


@pytest.mark.parametrize(
    ("prop", "required"),
    [
        ({"type": "string"}, False),
        ({"type": "string", "enum": ["a", "b"]}, False),
        ({"type": "boolean"}, True),
        ({"type": "array", "items": {"enum": ["a"]}}, True),
        ({"type": "array", "items": {"enum": ["a"]}, "minItems": 0}, True),
        ({"type": "array", "items": {"enum": ["a"]}, "minItems": 1}, False),
    ],
    ids=["optional text", "optional radio", "boolean", "group", "group min 0", "optional group min 1"],
)
def test_fields_that_accept_an_empty_answer_have_no_required_mark(
    prop: dict[str, object], required: bool
) -> None:
    """An unticked box answers false; an unticked required group answers "none" unless minItems says no."""
    soup = render_single(prop, required)
    assert soup.select(".required, .visually-hidden, [required]") == []


def test_every_control_has_a_label_and_titles_fall_back_to_property_names() -> None:
    fields = parse_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "string", "title": "Alpha"}, "b": {"type": "boolean"}},
        }
    )
    soup = render(build_widgets(fields))
    assert [one(soup, f'label[for="{i}"]').get_text(strip=True) for i in ("field-0", "field-1")] == [
        "Alpha",
        "b",
    ]
    soup = render(build_widgets(EVERY_KIND))
    for control in soup.select("input, select"):
        assert soup.select(f'label[for="{control["id"]}"]'), control


def test_description_becomes_help_text_the_control_points_to() -> None:
    soup = render_single({"type": "string", "description": "Who to notify"})
    assert one(soup, "p.field-help#field-0-help").get_text() == "Who to notify"
    assert attr(soup, "input#field-0", "aria-describedby") == "field-0-help"


def test_date_time_field_says_it_is_in_utc() -> None:
    soup = render_single({"type": "string", "format": "date-time", "description": "When"})
    assert one(soup, "#field-0-hint").get_text() == "Time in UTC."
    assert attr(soup, "input#field-0", "aria-describedby") == "field-0-help field-0-hint"


@pytest.mark.parametrize(
    ("prop", "selector", "count"),
    [
        ({"type": "string", "default": "hello"}, 'input#field-0[value="hello"]', 1),
        ({"type": "string", "format": "date", "default": "2026-07-28"}, 'input[value="2026-07-28"]', 1),
        ({"type": "number", "default": 2.5}, 'input#field-0[value="2.5"]', 1),
        ({"type": "integer", "default": 3.0}, 'input#field-0[value="3"]', 1),
        ({"type": "boolean", "default": True}, "input#field-0[checked]", 1),
        ({"type": "boolean", "default": False}, "input[checked]", 0),
        ({"type": "string", "enum": ["a", "b"], "default": "b"}, 'input[checked][value="b"]', 1),
        ({"type": "string", "enum": list("abcdefg"), "default": "g"}, "option[selected]", 1),
        ({"type": "string", "enum": list("abcdefg"), "default": "g"}, 'option[selected][value="g"]', 1),
        (
            {"type": "array", "items": {"enum": ["x", "y", "z"]}, "default": ["x", "z"]},
            "#field-0-0[checked], #field-0-2[checked]",
            2,
        ),
        ({"type": "array", "items": {"enum": ["x", "y", "z"]}, "default": ["x", "z"]}, "[checked]", 2),
        ({"type": "string"}, 'input#field-0[value=""]', 1),
    ],
)
def test_defaults_are_pre_filled(prop: dict[str, object], selector: str, count: int) -> None:
    assert len(render_single(prop, required=True).select(selector)) == count


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("2026-01-02T03:04:00Z", "2026-01-02T03:04"),
        ("2026-01-02T03:04:59.999Z", "2026-01-02T03:04"),
        ("2026-01-02T03:04:05+02:00", "2026-01-02T01:04"),
        ("2026-01-01T23:30:00-01:00", "2026-01-02T00:30"),
        ("2026-01-02t03:04:05z", "2026-01-02T03:04"),
        ("2026-12-31T23:59:60Z", "2026-12-31T23:59:60Z"),
    ],
)
def test_date_time_values_are_shown_in_utc_to_the_minute(stored: str, shown: str) -> None:
    (widget,) = build_widgets(single({"type": "string", "format": "date-time", "default": stored}))
    assert widget.value == shown


@pytest.mark.parametrize(
    ("posted", "content"),
    [
        ("2026-01-02T03:04", "2026-01-02T03:04:00Z"),
        ("2026-01-02T03:04:05", "2026-01-02T03:04:05Z"),
        ("2026-01-02T03:04:05.250", "2026-01-02T03:04:05.250Z"),
        ("2026-01-02T03:04:05+02:00", "2026-01-02T03:04:05+02:00"),
        ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z"),
    ],
)
def test_posted_date_time_is_read_as_utc_and_sent_as_rfc_3339(posted: str, content: str) -> None:
    fields = single({"type": "string", "format": "date-time"}, required=True)
    assert form_to_content(fields, {"f0": [posted]}) == ({"f": content}, {})


@pytest.mark.parametrize(
    ("posted", "shown"),
    [
        ("2026-01-02T03:04", "2026-01-02T03:04"),
        ("2026-01-02T03:04:05+02:00", "2026-01-02T01:04"),
        ("tomorrow", "tomorrow"),
    ],
)
def test_posted_date_time_is_shown_again_as_posted_or_in_utc(posted: str, shown: str) -> None:
    fields = single({"type": "string", "format": "date-time"})
    (widget,) = build_widgets(fields, submitted={"f0": [posted]})
    assert widget.value == shown


def test_typed_values_replace_the_defaults() -> None:
    widgets = build_widgets(DEPLOY, {"environment": "production", "confirm": True})
    assert [c.checked for c in widgets[0].options] == [False, True]
    assert widgets[1].checked
    assert [w.name for w in build_widgets(DEPLOY, {}) if w.checked or any(c.checked for c in w.options)] == []


def test_form_to_content_returns_exactly_the_typed_content() -> None:
    form = {
        "f0": ["Ada"],
        "f1": ["ada@example.com"],
        "f2": ["https://example.com/x"],
        "f3": ["2026-07-28"],
        "f4": ["2026-07-28T09:30"],
        "f5": [" 3 "],
        "f6": ["0.25"],
        "f7": ["true"],
        "f8": ["production"],
        "f9": ["r7"],
        "f10": ["x", "z"],
    }
    content, errors = form_to_content(EVERY_KIND, form)
    assert errors == {}
    assert content == {
        "name": "Ada",
        "email": "ada@example.com",
        "site": "https://example.com/x",
        "day": "2026-07-28",
        "at": "2026-07-28T09:30:00Z",
        "replicas": 3,
        "ratio": 0.25,
        "confirm": True,
        "environment": "production",
        "region": "r7",
        "tags": ["x", "z"],
    }
    assert [type(content[k]) for k in ("replicas", "ratio", "confirm")] == [int, float, bool]


def test_form_to_content_ignores_keys_that_are_not_fields_and_an_unticked_box_is_false() -> None:
    form = {
        "csrf_token": ["t"],
        "digest": ["d"],
        "action": ["accept"],
        "f0": ["staging"],
        "confirm": ["true"],
    }
    assert form_to_content(DEPLOY, form) == ({"environment": "staging", "confirm": False}, {})


def test_form_to_content_accepts_bare_strings_as_single_values() -> None:
    assert form_to_content(DEPLOY, {"f0": "production", "f1": "on"}) == (
        {"environment": "production", "confirm": True},
        {},
    )


@pytest.mark.parametrize(
    ("form", "errors"),
    [
        ({}, {"name": "is required", "environment": "is required"}),
        ({"f0": [""], "f8": ["staging"]}, {"name": "is required"}),
        ({"f0": ["A"], "f8": ["staging"]}, {"name": "must be at least 2 characters"}),
        ({"f0": ["Ada"], "f8": ["dev"]}, {"environment": "must be one of: staging, production"}),
        ({"f0": ["Ada"], "f8": ["staging"], "f1": ["nope"]}, {"email": "must be a valid email address"}),
        ({"f0": ["Ada"], "f8": ["staging"], "f5": ["2.5"]}, {"replicas": "must be a whole number"}),
        ({"f0": ["Ada"], "f8": ["staging"], "f5": ["10"]}, {"replicas": "must be at most 9"}),
        ({"f0": ["Ada"], "f8": ["staging"], "f6": ["x"]}, {"ratio": "must be a number"}),
        ({"f0": ["Ada"], "f8": ["staging"], "f7": ["yes"]}, {"confirm": "must be true or false"}),
        (
            {"f0": ["Ada"], "f8": ["staging"], "f4": ["tomorrow"]},
            {"at": "must be a date and time with a timezone, e.g. 2026-07-28T09:30:00Z"},
        ),
        (
            {"f0": ["Ada"], "f8": ["staging"], "f10": ["x", "q"]},
            {"tags": "each selection must be one of: x, y, z"},
        ),
    ],
)
def test_missing_and_invalid_values_give_errors_keyed_by_property_name(
    form: Mapping[str, Sequence[str]], errors: dict[str, str]
) -> None:
    assert form_to_content(EVERY_KIND, form)[1] == errors


def test_rendered_defaults_post_back_as_the_defaults() -> None:
    fields = parse_schema(
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "default": "hi"},
                "at": {"type": "string", "format": "date-time", "default": "2026-07-28T09:30:00Z"},
                "count": {"type": "integer", "default": 4},
                "ratio": {"type": "number", "default": 0.5},
                "confirm": {"type": "boolean", "default": True},
                "off": {"type": "boolean", "default": False},
                "env": {"type": "string", "enum": ["a", "b"], "default": "b"},
                "optional": {"type": "string", "enum": ["a", "b"]},
                "region": {"type": "string", "enum": list("abcdefg"), "default": "f"},
                "tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "default": ["y", "z"]},
            },
        }
    )
    assert form_to_content(fields, submit(render(build_widgets(fields)))) == (defaults(fields), {})


def test_re_render_after_an_error_keeps_what_was_typed_and_shows_the_message_next_to_the_field() -> None:
    form = {"f0": ["A"], "f1": ["ada@"], "f5": ["12"], "f7": ["true"], "f8": ["production"], "f10": ["y"]}
    _, errors = form_to_content(EVERY_KIND, form)
    soup = render(build_widgets(EVERY_KIND, None, errors, submitted=form))
    for field_id, message in [
        ("field-0", "Error: This field must be at least 2 characters"),
        ("field-1", "Error: This field must be a valid email address"),
        ("field-5", "Error: This field must be at most 9"),
    ]:
        control = one(soup, f"input#{field_id}")
        assert control["aria-invalid"] == "true"
        assert f"{field_id}-error" in str(control["aria-describedby"]).split()
        assert one(soup, f".field:has(> #{field_id}) > p.field-error#{field_id}-error").get_text() == message
    assert [attr(soup, f"#field-{i}", "value") for i in (0, 1, 5)] == ["A", "ada@", "12"]
    assert one(soup, "#field-7").has_attr("checked")
    assert one(soup, "#field-8-1").has_attr("checked")
    assert [box["value"] for box in soup.select("#field-10 [checked]")] == ["y"]
    assert len(soup.select("[aria-invalid]")) == 3
    assert len(soup.select(".field-error")) == 3


def test_error_on_a_group_marks_every_choice_invalid_and_is_described_by_the_fieldset() -> None:
    fields = single({"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 1}, required=True)
    form: dict[str, list[str]] = {}
    soup = render(build_widgets(fields, None, form_to_content(fields, form)[1], submitted=form))
    assert attr(soup, "fieldset#field-0", "aria-describedby") == "field-0-hint field-0-error"
    assert one(soup, "#field-0-error").get_text() == "Error: This field must have at least 1 selection"
    assert [box.get("aria-invalid") for box in soup.select("input")] == ["true", "true"]


def test_submitted_choices_outside_the_options_leave_nothing_chosen() -> None:
    soup = render(build_widgets(EVERY_KIND, submitted={"f8": ["dev"], "f9": ["r99"], "f10": ["q"]}))
    assert soup.select("[checked], option[selected]:not([value=''])") == []
    assert one(soup, "select#field-9 option[selected]")["value"] == ""


PAYLOADS = [
    "<script>alert(1)</script>",
    '" onfocus="x',
    "' autofocus onfocus='x",
    "<img src=x onerror=y>",
    'hx-get="/x"',
    "{{7*7}}",
    "</label></fieldset><form action=/x>",
]
SERVER_TEXT_FREE = {
    "name": re.compile(r"f[0-9]+"),
    "id": re.compile(r"field-[0-9]+(-[0-9]+|-none|-help|-hint|-error)?"),
    "for": re.compile(r"field-[0-9]+(-[0-9]+|-none)?"),
    "aria-describedby": re.compile(r"field-[0-9]+-(help|hint|error)( field-[0-9]+-(help|hint|error))*"),
}


def shape(text: str) -> dict[str, object]:
    """A schema using every widget kind, with `text` in every piece of server-chosen text."""
    labelled = [{"const": f"{n}{text}", "title": f"{n} {text}"} for n in "abc"]
    return {
        "type": "object",
        "properties": {
            f"s{text}": {"type": "string", "title": text, "description": text, "default": text},
            f"b{text}": {"type": "boolean", "title": text, "description": text, "default": True},
            f"e{text}": {
                "type": "string",
                "enum": [f"1{text}", f"2{text}"],
                "enumNames": [text, f"2 {text}"],
                "default": f"2{text}",
            },
            f"o{text}": {"type": "string", "title": text, "oneOf": labelled},
            f"l{text}": {"type": "string", "enum": [f"{i}{text}" for i in range(7)], "default": f"6{text}"},
            f"m{text}": {"type": "array", "description": text, "items": {"anyOf": labelled}, "maxItems": 2},
            f"n{text}": {"type": "integer", "title": text, "minimum": 0},
            f"d{text}": {"type": "string", "format": "date-time", "title": text},
        },
        "required": [f"s{text}", f"o{text}", f"l{text}"],
    }


def renderings(text: str) -> list[BeautifulSoup]:
    """The fields with their defaults, and re-rendered after a post full of `text` that fails validation."""
    fields = parse_schema(shape(text))
    form = {f"f{i}": [text] for i in range(len(fields))}
    _, errors = form_to_content(fields, form)
    assert len(errors) == 7
    return [render(build_widgets(fields)), render(build_widgets(fields, None, errors, submitted=form))]


def markup_shape(soup: BeautifulSoup) -> Counter[tuple[str, str | None]]:
    pairs: Counter[tuple[str, str | None]] = Counter()
    for tag in soup.find_all(True):
        pairs[(tag.name, None)] += 1
        pairs.update((tag.name, name) for name in tag.attrs)
    return pairs


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_server_text_stays_inert_text(payload: str) -> None:
    for hostile, benign in zip(renderings(payload), renderings("benign"), strict=True):
        assert markup_shape(hostile) == markup_shape(benign)
        for tag in hostile.find_all(True):
            for name, value in tag.attrs.items():
                text = " ".join(value) if isinstance(value, list) else str(value)
                if name in SERVER_TEXT_FREE:
                    assert SERVER_TEXT_FREE[name].fullmatch(text), (tag.name, name, text)
                elif name != "value":
                    assert payload not in text, (tag.name, name, text)
        assert payload in one(hostile, 'label[for="field-0"]').get_text()
        assert "49" not in hostile.get_text()
    raw = FIELDS_PAGE.render(widgets=build_widgets(parse_schema(shape(payload))))
    if any(c in payload for c in "<>\"'"):
        assert payload not in raw
