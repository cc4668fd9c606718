"""Text from outside kgen made safe for where it goes: a terminal, a file, a stored log.

Model replies, served model names, spec fields, file names and compiler output are data. Before
kgen prints any of it, `terminal()` removes what a terminal would obey (escape sequences, control
characters, bidirectional overrides) and, for rich output, escapes markup. Before a reply is
written anywhere, `clean_reply()` removes what would break a file or a JSON line (lone surrogates,
NULs, control characters). `redact_secrets()` and `redact_paths()` keep keys and host paths out of
what kgen stores (run directories, the compile cache).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

SECRET_ENV = ("OPENAI_API_KEY", "KGEN_API_KEY")

# ESC-introduced sequences: CSI (ESC [ ... final), OSC/DCS/PM/APC/SOS (ESC ] ... BEL or ST),
# and the two-character forms (ESC 7, ESC c, ...). The 8-bit C1 introducers go the same way.
_ESCAPE = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
                     r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)"
                     r"|\x1b[ -/]*[0-~]?", re.DOTALL)
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
# that reorder what a reader sees (the "trojan source" characters).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# In a file a carriage return and a form feed are harmless; keep them there.
_FILE_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f\x80-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_MARKUP = re.compile(r"(\\*)\[")


def terminal(text: object, markup: bool = False) -> str:
    """`text` as a terminal may show it: no escape sequences or control characters (newlines
    and tabs stay); with markup=True also escaped for rich, so `[bold]` prints as written."""
    clean = _CONTROL.sub("", _ESCAPE.sub("", _SURROGATE.sub("\ufffd", str(text))))
    if markup:
        # rich reads `\[` as a literal bracket; backslashes before it are doubled first.
        clean = _MARKUP.sub(lambda m: m.group(1) * 2 + "\\[", clean)
    return clean


def clean_reply(text: str) -> str:
    """A model reply fit to be written to a file or a JSON line: lone surrogates become U+FFFD,
    NULs and control characters (escape sequences included) go; newlines, tabs, CR, FF stay."""
    text = _SURROGATE.sub("\ufffd", text)
    return _FILE_CONTROL.sub("", _ESCAPE.sub("", text))


def redact_secrets(text: str, names: Iterable[str] = SECRET_ENV) -> str:
    """Replace the value of every configured API key found in text (8 characters or longer)."""
    for name in names:
        secret = os.environ.get(name, "")
        if len(secret) >= 8:
            text = text.replace(secret, "[redacted]")
    return text


_ABSOLUTE = re.compile(r"(?<![\w.~-])/(?:[\w.+@-]+/)*[\w.+@-]+")


def redact_paths(text: str, keep: dict[str, str]) -> str:
    """Absolute host paths in `text` shortened: a prefix in `keep` becomes its label (the work
    folder becomes "" so its files read as plain names), any other path `<host>/basename`."""
    def shorten(m: re.Match[str]) -> str:
        path = m.group(0)
        for prefix, label in sorted(keep.items(), key=lambda kv: -len(kv[0])):
            prefix = prefix.rstrip("/")
            if path == prefix or path.startswith(prefix + "/"):
                rest = path[len(prefix):].lstrip("/")
                return f"{label}/{rest}" if label else rest
        return "<host>/" + path.rsplit("/", 1)[-1]

    return _ABSOLUTE.sub(shorten, text)
