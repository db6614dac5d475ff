"""The consent gate's link checks: which links may be opened, which site they lead to, what to warn about."""

from __future__ import annotations

import socket
from typing import NoReturn

import pytest

from console.calls.links import inspection as links
from console.calls.links.inspection import LinkReport, inspect_link

REFUSED = None  # expected warnings for a link that must not be opened at all
LONG_URL = "https://example.com/" + "a" * (9 * 1024)

# (url, expected warning codes or REFUSED, highlighted site as written in the URL)
DECISIONS = [
    pytest.param("https://example.com/", (), "example.com", id="plain-https"),
    pytest.param("https://example.com", (), "example.com", id="https-without-path"),
    pytest.param("https://www.example.com/a/b?x=1&y=2#frag", (), "example.com", id="path-query-fragment"),
    pytest.param("HTTPS://WWW.Example.COM/", (), "Example.COM", id="uppercase-scheme-and-host"),
    pytest.param("https://a.b.example.co.uk/x", (), "example.co.uk", id="multi-part-suffix"),
    pytest.param("https://foo.github.io/", (), "foo.github.io", id="private-suffix"),
    pytest.param("https://login.evil.github.io/", (), "evil.github.io", id="private-suffix-subdomain"),
    pytest.param("https://x.city.kobe.jp/", (), "city.kobe.jp", id="suffix-exception-rule"),
    pytest.param("https://example.com:443/", (), "example.com", id="default-port"),
    pytest.param("https://example.com:8443/", ("port",), "example.com", id="non-default-port"),
    pytest.param(
        "https://xn--pple-43d.com/", ("punycode", "idn", "mixed_script"), "xn--pple-43d.com", id="puny"
    ),
    pytest.param("https://аpple.com/", ("idn", "mixed_script"), "аpple.com", id="cyrillic-a"),
    pytest.param("https://αpple.com/", ("idn", "mixed_script"), "αpple.com", id="greek-alpha"),
    pytest.param(
        "https://xn--80ak6aa92e.com/",
        ("punycode", "idn", "mixed_script"),
        "xn--80ak6aa92e.com",
        id="all-cyrillic",
    ),
    pytest.param("https://bücher-24.de/", ("idn",), "bücher-24.de", id="idn-with-digits-and-hyphen"),
    pytest.param("https://日本語.jp/", ("idn",), "日本語.jp", id="japanese"),
    pytest.param("https://bank.example@evil.example/", ("userinfo",), "evil.example", id="userinfo"),
    pytest.param("https://user:pass@evil.example/", ("userinfo",), "evil.example", id="user-and-password"),
    pytest.param("https://a@b@evil.example/", ("userinfo",), "evil.example", id="two-at-signs"),
    pytest.param("https://93.184.216.34/x", ("ip_literal",), "93.184.216.34", id="ipv4"),
    pytest.param("https://[2001:db8::1]/", ("ip_literal",), "[2001:db8::1]", id="ipv6"),
    pytest.param("https://intranet/", ("no_registrable_domain",), "intranet", id="single-label"),
    pytest.param("https://co.uk/", ("no_registrable_domain",), "co.uk", id="bare-public-suffix"),
    pytest.param("https://github.io/", ("no_registrable_domain",), "github.io", id="bare-private-suffix"),
    pytest.param("http://example.com/", REFUSED, "", id="plain-http"),
    pytest.param("http://localhost:8080/cb", REFUSED, "", id="http-loopback-outside-development"),
    pytest.param("javascript:alert(1)", REFUSED, "", id="javascript"),
    pytest.param("JaVaScRiPt:alert(1)", REFUSED, "", id="javascript-mixed-case"),
    pytest.param(" \tjavascript:alert(1)", REFUSED, "", id="javascript-leading-whitespace"),
    pytest.param("java\tscript:alert(1)", REFUSED, "", id="javascript-inner-tab"),
    pytest.param("data:text/html,<script>alert(1)</script>", REFUSED, "", id="data"),
    pytest.param("file:///etc/passwd", REFUSED, "", id="file"),
    pytest.param("vbscript:x", REFUSED, "", id="vbscript"),
    pytest.param("blob:https://example.com/uuid", REFUSED, "", id="blob"),
    pytest.param("ftp://example.com/file", REFUSED, "", id="ftp"),
    pytest.param("mailto:someone@example.com", REFUSED, "", id="mailto"),
    pytest.param("//evil.example/x", REFUSED, "", id="scheme-relative"),
    pytest.param("/connect/123", REFUSED, "", id="relative-path"),
    pytest.param("", REFUSED, "", id="empty"),
    pytest.param("https://", REFUSED, "", id="no-host"),
    pytest.param("https:///evil.example", REFUSED, "", id="three-slashes"),
    pytest.param("https:evil.example", REFUSED, "", id="no-slashes"),
    pytest.param("https://user@/", REFUSED, "", id="userinfo-without-host"),
    pytest.param("https://exa mple.com/", REFUSED, "", id="space-in-host"),
    pytest.param("https://example.com/a b", REFUSED, "", id="space-in-path"),
    pytest.param("https://example.com/\r\nSet-Cookie: x=1", REFUSED, "", id="crlf"),
    pytest.param("https://example.com/\x00", REFUSED, "", id="nul"),
    pytest.param("https://example.com/\u202egnp.exe", REFUSED, "", id="bidi-override"),
    pytest.param("https://ex\u200bample.com/", REFUSED, "", id="zero-width-space"),
    pytest.param("https://evil.example\\@example.com/", REFUSED, "", id="backslash"),
    pytest.param(LONG_URL, REFUSED, "", id="over-8-kib"),
    pytest.param("https://ex%61mple.com/", REFUSED, "", id="percent-encoded-host"),
    pytest.param("https://ｅxample.com/", REFUSED, "", id="fullwidth-letter"),
    pytest.param("https://faß.de/", REFUSED, "", id="idna-2003-2008-difference"),
    pytest.param("https://example.com∕evil.com/", REFUSED, "", id="division-slash"),
    pytest.param("https://xn--zz.com/", REFUSED, "", id="invalid-punycode"),
    pytest.param("https://" + "a" * 64 + ".com/", REFUSED, "", id="label-too-long"),
    pytest.param("https://a..example.com/", REFUSED, "", id="empty-label"),
    pytest.param("https://example.com./", REFUSED, "", id="trailing-dot"),
    pytest.param("https://exa_mple!.com/", REFUSED, "", id="bad-host-character"),
    pytest.param("https://127.1/", REFUSED, "", id="short-ipv4"),
    pytest.param("https://0x7f.0.0.1/", REFUSED, "", id="hex-ipv4"),
    pytest.param("https://2130706433/", REFUSED, "", id="decimal-ipv4"),
    pytest.param("https://010.0.0.1/", REFUSED, "", id="octal-ipv4"),
    pytest.param("https://[2001:db8::1/", REFUSED, "", id="unclosed-ipv6"),
    pytest.param("https://[not:an:ip]/", REFUSED, "", id="bad-ipv6"),
    pytest.param("https://[fe80::1%25eth0]/", REFUSED, "", id="ipv6-zone"),
    pytest.param("https://example.com:99999/", REFUSED, "", id="port-out-of-range"),
    pytest.param("https://example.com:0/", REFUSED, "", id="port-zero"),
    pytest.param("https://example.com:8o/", REFUSED, "", id="port-not-a-number"),
    pytest.param("https://a:b:80/", REFUSED, "", id="colons-in-host"),
]

OPENABLE = [p for p in DECISIONS if p.values[1] is not REFUSED]


@pytest.mark.parametrize(("url", "codes", "site"), DECISIONS)
def test_each_link_gets_the_expected_decision_warnings_and_highlighted_site(
    url: str, codes: tuple[str, ...] | None, site: str
) -> None:
    report = inspect_link(url)
    assert report.url == url
    if codes is REFUSED:
        assert not report.openable
        assert report.refusal
    else:
        assert report.openable, report.refusal
        assert report.refusal is None
        assert report.warning_codes == codes
    if site:
        assert report.highlight[1] == site


@pytest.mark.parametrize(("url", "codes", "site"), OPENABLE)
def test_highlight_parts_rebuild_the_url_and_the_middle_is_the_site(
    url: str, codes: tuple[str, ...], site: str
) -> None:
    report = inspect_link(url)
    before, middle, after = report.highlight
    assert before + middle + after == url
    assert before.lower().startswith("https://")
    if report.registrable_domain is None:
        assert middle.lower() == report.host_display
    elif middle.isascii():
        assert middle.lower() == report.registrable_domain
    else:
        assert middle.lower() == report.registrable_display
    assert middle.encode("idna").decode("ascii").lower() == (report.registrable_domain or report.host_ascii)


def test_https_link_keeps_path_query_and_fragment_out_of_the_site() -> None:
    report = inspect_link("https://accounts.example.com:8443/connect?state=abc#done")
    assert report == LinkReport(
        url="https://accounts.example.com:8443/connect?state=abc#done",
        openable=True,
        refusal=None,
        scheme="https",
        host_display="accounts.example.com",
        host_ascii="accounts.example.com",
        registrable_domain="example.com",
        registrable_display="example.com",
        port=8443,
        warnings=report.warnings,
        highlight=("https://accounts.", "example.com", ":8443/connect?state=abc#done"),
    )
    assert report.warning_codes == ("port",)


@pytest.mark.parametrize(
    ("url", "registrable"),
    [
        ("https://a.b.example.co.uk/", "example.co.uk"),
        ("https://example.co.uk/", "example.co.uk"),
        ("https://foo.github.io/", "foo.github.io"),
        ("https://evil.github.io/login", "evil.github.io"),
        ("https://a.b.foo.blogspot.com/", "foo.blogspot.com"),
        ("https://www.example.com.au/", "example.com.au"),
        ("https://shop.example.unknowntld/", "example.unknowntld"),
    ],
)
def test_registrable_domain_honours_icann_and_private_public_suffixes(url: str, registrable: str) -> None:
    report = inspect_link(url)
    assert report.registrable_domain == registrable
    assert report.registrable_display == registrable
    assert report.site_display == registrable


def test_punycode_host_is_shown_in_unicode_and_warned() -> None:
    report = inspect_link("https://xn--pple-43d.com/")
    assert report.openable
    assert report.host_display == "аpple.com"
    assert report.host_ascii == "xn--pple-43d.com"
    assert report.registrable_domain == "xn--pple-43d.com"
    assert report.registrable_display == "аpple.com"
    assert {"punycode", "idn", "mixed_script"} <= set(report.warning_codes)
    punycode = next(w for w in report.warnings if w.code == "punycode")
    assert "аpple.com" in punycode.message


def test_unicode_host_is_warned_and_its_ascii_form_is_exposed() -> None:
    report = inspect_link("https://аpple.com/")
    assert report.openable
    assert report.host_display == "аpple.com"
    assert report.host_ascii == "xn--pple-43d.com"
    assert report.registrable_domain == "xn--pple-43d.com"
    assert report.highlight == ("https://", "аpple.com", "/")
    assert report.warning_codes == ("idn", "mixed_script")
    idn = next(w for w in report.warnings if w.code == "idn")
    assert "xn--pple-43d.com" in idn.message


def test_uppercase_unicode_host_is_lowercased_for_display() -> None:
    report = inspect_link("https://БАНК.example/")
    assert report.host_display == "банк.example"
    assert report.host_ascii == "банк.example".encode("idna").decode("ascii")
    assert report.highlight == ("https://", "БАНК.example", "/")


@pytest.mark.parametrize(
    ("url", "mixed"),
    [
        ("https://аpple.com/", True),  # Cyrillic а inside a Latin label
        ("https://pаypal-secure.example/", True),
        ("https://αpple.com/", True),  # Greek alpha
        ("https://аррӏе.com/", True),  # all-Cyrillic label under a Latin TLD
        ("https://bücher-24.de/", False),  # digits and hyphens don't count as a script
        ("https://日本語.jp/", False),  # Han with a Latin TLD is normal
        ("https://ひらがなカタカナ漢字.jp/", False),  # Japanese mixes three scripts in one label
        ("https://пример.рф/", False),  # all Cyrillic
        ("https://example.com/", False),
    ],
)
def test_mixed_script_is_warned_for_lookalike_letters_only(url: str, mixed: bool) -> None:
    report = inspect_link(url)
    assert report.openable
    assert ("mixed_script" in report.warning_codes) is mixed


def test_userinfo_is_warned_and_the_site_is_the_host_after_the_at_sign() -> None:
    report = inspect_link("https://bank.example@evil.example/")
    assert report.openable
    assert report.host_display == "evil.example"
    assert report.registrable_domain == "evil.example"
    assert report.highlight == ("https://bank.example@", "evil.example", "/")
    assert report.warning_codes == ("userinfo",)
    assert "evil.example" in report.warnings[0].message


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://93.184.216.34/x", "93.184.216.34"),
        ("https://[2001:db8::1]/", "[2001:db8::1]"),
        ("https://[2001:DB8:0:0::1]:8443/", "[2001:db8::1]"),
    ],
)
def test_ip_literal_hosts_are_warned_and_have_no_registrable_domain(url: str, host: str) -> None:
    report = inspect_link(url)
    assert report.openable
    assert "ip_literal" in report.warning_codes
    assert "no_registrable_domain" not in report.warning_codes
    assert report.host_display == host
    assert report.host_ascii == host
    assert report.registrable_domain is None
    assert report.registrable_display is None
    assert report.site_display == host


@pytest.mark.parametrize(
    ("url", "port", "warned"),
    [
        ("https://example.com/", None, False),
        ("https://example.com:443/", 443, False),
        ("https://example.com:8443/", 8443, True),
        ("https://example.com:80/", 80, True),
        ("https://example.com:/", None, False),
    ],
)
def test_only_non_default_explicit_ports_are_warned(url: str, port: int | None, warned: bool) -> None:
    report = inspect_link(url)
    assert report.openable
    assert report.port == port
    assert ("port" in report.warning_codes) is warned


@pytest.mark.parametrize(
    ("url", "allow_http_loopback", "openable"),
    [
        ("http://example.com/", False, False),
        ("http://example.com/", True, False),
        ("http://localhost:8080/cb", False, False),
        ("http://localhost:8080/cb", True, True),
        ("http://LOCALHOST/cb", True, True),
        ("http://127.0.0.1:9000/", True, True),
        ("http://127.8.9.10/", True, True),
        ("http://[::1]:9000/", True, True),
        ("http://128.0.0.1/", True, False),
        ("http://localhost.example.com/", True, False),
        ("http://10.0.0.1/", True, False),
    ],
)
def test_plain_http_opens_only_to_loopback_in_development(
    url: str, allow_http_loopback: bool, openable: bool
) -> None:
    report = inspect_link(url, allow_http_loopback=allow_http_loopback)
    assert report.openable is openable
    assert "plain_http" in report.warning_codes
    if openable:
        assert report.refusal is None
    else:
        assert report.refusal is not None
        assert "http" in report.refusal


def test_refused_http_link_still_shows_which_site_it_names() -> None:
    report = inspect_link("http://www.example.com/")
    assert report.scheme == "http"
    assert report.registrable_domain == "example.com"
    assert report.highlight == ("http://www.", "example.com", "/")


@pytest.mark.parametrize(
    ("url", "scheme", "reason"),
    [
        ("javascript:alert(1)", "javascript", "run code"),
        ("JaVaScRiPt:alert(1)", "javascript", "run code"),
        ("vbscript:x", "vbscript", "run code"),
        ("data:text/html,<h1>hi</h1>", "data", "whole page"),
        ("file:///etc/passwd", "file", "files on your own computer"),
        ("ftp://example.com/", "ftp", "ftp:"),
        (" \tjavascript:alert(1)", None, "whitespace"),
        ("https://example.com/\r\n", "https", "whitespace"),
        ("https://example.com/\x07", "https", "U+0007"),
        ("//evil.example/x", None, "no scheme"),
        ("https://", "https", "no host"),
        ("https://evil.example\\@good.example/", "https", "backslash"),
        (LONG_URL, "https", "8 KiB"),
    ],
)
def test_refused_links_say_why_in_plain_english(url: str, scheme: str | None, reason: str) -> None:
    report = inspect_link(url)
    assert not report.openable
    assert report.refusal is not None
    assert reason in report.refusal
    assert report.scheme == scheme
    assert report.warnings == ()
    assert report.host_display is None
    assert report.registrable_domain is None
    assert report.highlight == (url, "", "")


def test_a_link_of_exactly_8_kib_is_still_judged_on_its_merits() -> None:
    url = "https://example.com/"
    url += "a" * (8 * 1024 - len(url))
    assert inspect_link(url).openable
    assert not inspect_link(url + "a").openable


@pytest.mark.parametrize(("url", "codes", "site"), OPENABLE)
def test_every_warning_has_a_plain_english_message(url: str, codes: tuple[str, ...], site: str) -> None:
    for warning in inspect_link(url).warnings:
        assert warning.message.endswith(".")
        assert len(warning.message.split()) >= 5


def test_inspecting_links_never_touches_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("inspect_link must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "gethostbyname", no_network)
    links._suffix_list.cache_clear()  # the bundled suffix list is loaded from disk, offline
    for param in DECISIONS:
        inspect_link(str(param.values[0]))
    assert inspect_link("https://a.b.example.co.uk/").registrable_domain == "example.co.uk"
