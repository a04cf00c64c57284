"""The ``{NAME}`` templates of a spec, checked when it is loaded.

Two kinds:

- a constraint's ``reason`` ("SMEM {SMEM_TOTAL} > 228 KB"): only plain ``{NAME}``
  placeholders, filled with the config's values; ``{{`` and ``}}`` are literal braces.
  Attribute access, indexing, format specs and conversions (``{x.__class__}``,
  ``{x[0]}``, ``{x:>100000000}``, ``{x!r}``) are refused: a reason is a message, not code;
- the argv templates of ``[build]``, ``[run]``, ``[build.harness]``, variants and shape
  ``args``: each ``{NAME}`` must name something that ``ksweep.build.argv.expand`` fills
  there, so that a typo fails ``ksweep plan`` instead of the first build of ``ksweep run``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable, Mapping

from ..errors import SpecError

# -- reasons ----------------------------------------------------------------------------

_REASON_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def reason_names(template: str) -> tuple[str, ...]:
    """The names a reason template reads; ValueError (a one-line problem) if it is not
    only text, ``{NAME}``, ``{{`` and ``}}``."""
    names = []
    for m in _REASON_TOKEN.finditer(template):
        token = m.group(0)
        if token in ("{{", "}}"):
            continue
        if token in ("{", "}"):
            raise ValueError(f"unmatched '{token}' at character {m.start() + 1}: write '{token * 2}' "
                             "for a literal brace")
        field = m.group(1)
        if _NAME.match(field):
            names.append(field)
            continue
        if not field.strip():
            why = "names nothing"
        elif "!" in field:
            why = "has a conversion ('!'), which is not allowed"
        elif ":" in field:
            why = "has a format spec (':'), which is not allowed"
        elif "." in field:
            why = "reads an attribute ('.'), which is not allowed"
        elif "[" in field:
            why = "indexes ('[...]'), which is not allowed"
        else:
            why = "is not a name"
        raise ValueError(f"'{_short(token)}' {why}: a reason names values as plain {{NAME}} "
                         "(write {{ and }} for literal braces)")
    return tuple(names)


def render_reason(template: str, env: Mapping[str, Any]) -> str:
    """Fill a reason's plain ``{NAME}`` placeholders; anything else is left as written."""

    def sub(m: re.Match) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        field = m.group(1)
        if field is not None and _NAME.match(field) and field in env:
            return str(env[field])
        return token

    return _REASON_TOKEN.sub(sub, template)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def unknown(kind: str, name: str, visible: Iterable[str], label: str, key: str, braces: bool = True) -> SpecError:
    """'unknown placeholder '{TILEE}' (did you mean '{TILE}'?)' as a SpecError of file and key."""
    close = difflib.get_close_matches(name, sorted(set(visible)), n=1)
    shown = f"{{{name}}}" if braces else name
    hint = ""
    if close:
        hint = f" (did you mean '{{{close[0]}}}'?)" if braces else f" (did you mean '{close[0]}'?)"
    return SpecError(f"unknown {kind} '{shown}'{hint}", path=label, key=key)
