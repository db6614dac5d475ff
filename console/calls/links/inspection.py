"""Judging a URL-mode elicitation link before a person is asked to open it (the consent gate).

`inspect_link` decides whether a link may be opened at all, which site it really leads to, and what a
person should be warned about (MCP 2026-07-28, section 6.6: show the full URL, highlight its domain,
warn about punycode and other ambiguous URLs, allow only https, and http to loopback in development).

It only reads the string: it never resolves a name, never fetches the URL and never touches the
network. The Public Suffix List comes bundled with the `publicsuffixlist` package and is read from
disk once.

Suffix-list choice: ICANN **and private** suffixes are honoured (the package default). Private
entries such as `github.io` or `blogspot.com` are places where strangers each get their own
subdomain, so `evil.github.io` is its own site and is highlighted as such, rather than as "github.io".

Deliberately strict: anything a browser might read differently from what the person is shown is
refused rather than explained (backslashes, percent-encoded or odd numeric hosts, host characters
that IDNA maps to something else, such as fullwidth letters or "ß", whitespace and control or
formatting characters anywhere). A refused link can only be declined or cancelled.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

MAX_URL_BYTES = 8 * 1024
MAX_HOST_LENGTH = 253

_DEFAULT_PORTS = {"https": 443, "http": 80}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*(?=:)")
_ASCII_LABEL = re.compile(r"[a-z0-9_\-]+")
_PORT = re.compile(r"[0-9]+")
# WHATWG URL: a host whose last label looks like a number is parsed as an IPv4 address.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.IPv6Address("::1")

# Script combinations that are normal inside one label (as in browsers' IDN display policies).
_ALLOWED_SCRIPT_MIXES = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
_SCRIPT_ALIASES = {"CJK": "Han", "IDEOGRAPHIC": "Han", "KATAKANA-HIRAGANA": "Katakana"}

_SCHEME_REFUSALS = {
    "javascript": "javascript: links run code inside the page instead of going to a website.",
    "vbscript": "vbscript: links run code instead of going to a website.",
    "data": "data: links carry a whole page inside the link, so there is no website to check.",
    "file": "file: links open files on your own computer.",
    "blob": "blob: links point at data held inside another page, not at a website.",
}


@dataclass(frozen=True)
class LinkWarning:
    code: str
    message: str


@dataclass(frozen=True)
class LinkReport:
    """What the consent gate shows about one link.

    `highlight` splits `url` (exactly as given) into (before, site, after): `site` is the registrable
    domain as written in the URL (or the whole host when there is none: IP literals, single-label
    hosts, bare public suffixes); for a refused link without a usable host it is `(url, "", "")`.
    """

    url: str
    openable: bool
    refusal: str | None
    scheme: str | None
    host_display: str | None
    host_ascii: str | None
    registrable_domain: str | None
    registrable_display: str | None
    port: int | None
    warnings: tuple[LinkWarning, ...]
    highlight: tuple[str, str, str]

    @property
    def warning_codes(self) -> tuple[str, ...]:
        return tuple(w.code for w in self.warnings)

    @property
    def site_display(self) -> str | None:
        """The name to put on the "Open <site>" button: the registrable domain, else the host."""
        return self.registrable_display or self.host_display


class _Refused(Exception):
    pass


@dataclass(frozen=True)
class _Host:
    display: str
    ascii: str
    registrable_ascii: str | None
    registrable_display: str | None
    site_start: int  # offset in the host text as given where the highlighted site starts
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    punycode: bool
    idn: bool
    mixed_script_labels: tuple[str, ...]
    host_scripts: tuple[str, ...]  # sorted scripts of the whole name, when they mix suspiciously


@functools.cache
def _suffix_list() -> PublicSuffixList:
    # Bundled list file; ICANN and private sections (see the module docstring).
    return PublicSuffixList()


def inspect_link(url: str, *, allow_http_loopback: bool = False) -> LinkReport:
    """Decide whether `url` may be opened and what to warn about. Pure string work, no network."""
    try:
        scheme = _check_text_and_scheme(url)
    except _Refused as refused:
        return _refused(url, str(refused), scheme=_scheme_or_none(url))
    if scheme not in _DEFAULT_PORTS:
        return _refused(url, _scheme_refusal(scheme), scheme=scheme)
    try:
        authority_start, userinfo, host_text, port = _split_authority(url, scheme)
        host = _parse_host(host_text)
    except _Refused as refused:
        return _refused(url, str(refused), scheme=scheme)

    warnings: list[LinkWarning] = []
    if host.punycode:
        warnings.append(
            LinkWarning(
                "punycode",
                f"The address is written in punycode ({host.ascii}). It reads as “{host.display}”: "
                "check that this is really the site you expect.",
            )
        )
    if host.idn:
        warnings.append(
            LinkWarning(
                "idn",
                "The address contains letters outside the basic Latin alphabet "
                f"(“{host.display}”, written {host.ascii}). "
                "Some letters look like Latin ones but are different.",
            )
        )
    if host.mixed_script_labels:
        labels = ", ".join(f"“{label}”" for label in host.mixed_script_labels)
        warnings.append(
            LinkWarning(
                "mixed_script",
                f"The address mixes alphabets in {labels}, a common trick to imitate a well-known name.",
            )
        )
    elif host.host_scripts:
        scripts = " and ".join(host.host_scripts)
        warnings.append(
            LinkWarning(
                "mixed_script",
                f"The address mixes alphabets ({scripts}) across its parts (“{host.display}”), "
                "a common trick to imitate a well-known name.",
            )
        )
    if host.ip is not None:
        warnings.append(
            LinkWarning(
                "ip_literal",
                f"The address is a bare IP address ({host.display}) rather than a named site.",
            )
        )
    site = host.registrable_display or host.display
    if userinfo is not None:
        warnings.append(
            LinkWarning(
                "userinfo",
                f"The address has text before an “@”. That text is not the site: this link goes to {site}.",
            )
        )
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        warnings.append(LinkWarning("port", f"The address uses an unusual port ({port})."))
    if scheme == "http":
        warnings.append(
            LinkWarning("plain_http", "The link uses plain http: the connection is not encrypted.")
        )
    if host.ip is None and host.registrable_ascii is None:
        warnings.append(
            LinkWarning(
                "no_registrable_domain",
                f"“{host.display}” is not a registered domain name (a single local name or a shared "
                "suffix), so it is not clear who runs it.",
            )
        )

    refusal: str | None = None
    if scheme == "http" and not (allow_http_loopback and _is_loopback(host)):
        refusal = (
            "Plain http links can't be opened because the connection is not encrypted. "
            "Only https links are allowed."
        )
    site_at = authority_start + (len(userinfo) + 1 if userinfo is not None else 0) + host.site_start
    site_end = site_at + len(host_text) - host.site_start
    return LinkReport(
        url=url,
        openable=refusal is None,
        refusal=refusal,
        scheme=scheme,
        host_display=host.display,
        host_ascii=host.ascii,
        registrable_domain=host.registrable_ascii,
        registrable_display=host.registrable_display,
        port=port,
        warnings=tuple(warnings),
        highlight=(url[:site_at], url[site_at:site_end], url[site_end:]),
    )


def _refused(url: str, refusal: str, *, scheme: str | None) -> LinkReport:
    return LinkReport(
        url=url,
        openable=False,
        refusal=refusal,
        scheme=scheme,
        host_display=None,
        host_ascii=None,
        registrable_domain=None,
        registrable_display=None,
        port=None,
        warnings=(),
        highlight=(url, "", ""),
    )


def _scheme_or_none(url: str) -> str | None:
    match = _SCHEME.match(url)
    return match.group(0).lower() if match else None


def _check_text_and_scheme(url: str) -> str:
    if len(url) > MAX_URL_BYTES or len(url.encode("utf-8", "surrogatepass")) > MAX_URL_BYTES:
        raise _Refused(f"The link is longer than {MAX_URL_BYTES // 1024} KiB.")
    if not url:
        raise _Refused("The link is empty.")
    for char in url:
        category = unicodedata.category(char)
        if char.isspace() or category[0] == "Z":
            raise _Refused(
                "The link contains spaces or other whitespace, which browsers handle unpredictably."
            )
        if category[0] == "C":
            raise _Refused(
                f"The link contains an invisible control or formatting character (U+{ord(char):04X})."
            )
    if "\\" in url:
        raise _Refused("The link contains a backslash, which browsers read as a slash.")
    scheme = _scheme_or_none(url)
    if scheme is None:
        raise _Refused(
            "The link has no scheme (it does not start with https://), so it is not a full address."
        )
    return scheme


def _scheme_refusal(scheme: str) -> str:
    reason = _SCHEME_REFUSALS.get(scheme, f"{scheme}: links do not lead to a website over https.")
    return f"{reason} Only https links can be opened."


def _split_authority(url: str, scheme: str) -> tuple[int, str | None, str, int | None]:
    """Return (offset of the authority, userinfo or None, host text as given, explicit port)."""
    start = len(scheme) + 3
    if url[len(scheme) : start] != "://":
        raise _Refused(f"The link must start with {scheme}:// followed by a host name.")
    end = start
    while end < len(url) and url[end] not in "/?#":
        end += 1
    authority = url[start:end]
    userinfo: str | None = None
    if "@" in authority:
        userinfo, _, hostport = authority.rpartition("@")
    else:
        hostport = authority
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise _Refused("The link's IPv6 address is missing its closing bracket.")
        host_text, after = hostport[: close + 1], hostport[close + 1 :]
        if after and not after.startswith(":"):
            raise _Refused("The link has unexpected text after its IPv6 address.")
        port_text = after[1:] if after else None
    elif ":" in hostport:
        host_text, _, port_text = hostport.rpartition(":")
    else:
        host_text, port_text = hostport, None
    if not host_text:
        raise _Refused("The link has no host name.")
    port: int | None = None
    if port_text:
        if not _PORT.fullmatch(port_text) or not 0 < int(port_text) <= 65535:
            raise _Refused(f"The link's port “{port_text}” is not a valid port number.")
        port = int(port_text)

    # Cross-check with the standard library's reading of the same URL: any disagreement about
    # where the host is means the link is ambiguous.
    try:
        split = urlsplit(url)
        split_host = split.hostname
        _ = split.port  # raises ValueError for a port urllib can't read
    except ValueError:
        raise _Refused("The link's address can't be read reliably.") from None
    expected_host = host_text[1:-1] if host_text.startswith("[") else host_text
    if split.netloc != authority or split_host != expected_host.lower():
        raise _Refused("The link's host name is ambiguous.")
    return start, userinfo, host_text, port


def _parse_host(host_text: str) -> _Host:
    if "%" in host_text:
        raise _Refused("The host name contains percent-encoding, which hides the real name.")
    if host_text.startswith("["):
        try:
            v6 = ipaddress.IPv6Address(host_text[1:-1])
        except ValueError:
            raise _Refused("The link's IPv6 address is not valid.") from None
        return _ip_host(f"[{v6.compressed}]", v6)
    lowered = host_text.lower()
    labels_given = host_text.split(".")
    if host_text.endswith("."):
        raise _Refused("The host name ends with a dot, which is unusual for a web address.")
    if "" in labels_given:
        raise _Refused("The host name has an empty part (two dots in a row or a leading dot).")
    if _NUMERIC_LABEL.fullmatch(labels_given[-1].lower()):
        try:
            v4 = ipaddress.IPv4Address(lowered)
        except ValueError:
            raise _Refused(
                "The host looks like a number that browsers read as an IP address in an unusual form."
            ) from None
        if str(v4) != lowered:
            raise _Refused("The host is an IP address written in an unusual form.")
        return _ip_host(str(v4), v4)

    ascii_labels: list[str] = []
    unicode_labels: list[str] = []
    punycode = False
    for given in labels_given:
        label = given.lower()
        if label.isascii():
            if not _ASCII_LABEL.fullmatch(label):
                raise _Refused(f"The host name contains characters that are not allowed (“{given}”).")
            if label.startswith("xn--"):
                punycode = True
                try:
                    decoded = label.encode("ascii").decode("idna")
                except UnicodeError:
                    raise _Refused(f"The host name has an invalid punycode part (“{given}”).") from None
                _check_unicode_label(decoded, given)
                unicode_labels.append(decoded)
            else:
                unicode_labels.append(label)
            ascii_labels.append(label)
        else:
            _check_unicode_label(label, given)
            try:
                encoded = label.encode("idna").decode("ascii")
                round_trip = encoded.encode("ascii").decode("idna")
            except UnicodeError:
                raise _Refused(f"The host name has an invalid international part (“{given}”).") from None
            if round_trip != label:
                raise _Refused(
                    f"The host name contains characters that browsers may read differently (“{given}”)."
                )
            ascii_labels.append(encoded)
            unicode_labels.append(label)
        if len(ascii_labels[-1]) > 63:
            raise _Refused("A part of the host name is longer than 63 characters.")

    host_ascii = ".".join(ascii_labels)
    if len(host_ascii) > MAX_HOST_LENGTH:
        raise _Refused(f"The host name is longer than {MAX_HOST_LENGTH} characters.")
    host_display = ".".join(unicode_labels)
    registrable = _suffix_list().privatesuffix(host_ascii)
    registrable_display: str | None = None
    site_start = 0
    if registrable is not None:
        count = registrable.count(".") + 1
        registrable_display = ".".join(unicode_labels[-count:])
        before = labels_given[:-count]
        site_start = len(".".join(before)) + 1 if before else 0
    return _Host(
        display=host_display,
        ascii=host_ascii,
        registrable_ascii=registrable,
        registrable_display=registrable_display,
        site_start=site_start,
        ip=None,
        punycode=punycode,
        idn=not host_display.isascii(),
        mixed_script_labels=tuple(label for label in unicode_labels if _mixes_scripts(label)),
        host_scripts=tuple(sorted(_scripts(host_display))) if _mixes_scripts(host_display) else (),
    )


def _ip_host(text: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> _Host:
    return _Host(
        display=text,
        ascii=text,
        registrable_ascii=None,
        registrable_display=None,
        site_start=0,
        ip=address,
        punycode=False,
        idn=False,
        mixed_script_labels=(),
        host_scripts=(),
    )


def _check_unicode_label(label: str, given: str) -> None:
    """International labels may hold letters, marks, digits, hyphens and underscores only."""
    for char in label:
        if char in "-_" or (char.isascii() and char.isalnum()):
            continue
        if char.isascii() or unicodedata.category(char)[0] not in "LMN":
            raise _Refused(f"The host name contains symbols that are not allowed (“{given}”).")


def _script(char: str) -> str | None:
    """Approximate Unicode script of a letter from its character name; None for non-letters."""
    if not unicodedata.category(char).startswith("L"):
        return None
    words = unicodedata.name(char, "").split()
    if not words:
        return None
    first = words[0]
    if first in {"FULLWIDTH", "HALFWIDTH"} and len(words) > 1:
        first = words[1]
    return _SCRIPT_ALIASES.get(first, first.capitalize())


def _scripts(text: str) -> set[str]:
    return {script for script in map(_script, text) if script is not None}


def _mixes_scripts(text: str) -> bool:
    scripts = _scripts(text)
    if len(scripts) < 2:
        return False
    return not any(scripts <= allowed for allowed in _ALLOWED_SCRIPT_MIXES)


def _is_loopback(host: _Host) -> bool:
    if host.ip is None:
        return host.ascii == "localhost"
    if isinstance(host.ip, ipaddress.IPv4Address):
        return host.ip in _LOOPBACK_V4
    return host.ip == _LOOPBACK_V6
