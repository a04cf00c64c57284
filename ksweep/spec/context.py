"""Where the loader is in the spec file, and the checks of one value each: every problem
becomes one SpecError line naming the file and the key."""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import ExprError, SpecError
from .expr import parse
from .names import did_you_mean

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Ctx:
    """The spec file's name, for messages, and the checks of one value."""

    def __init__(self, label: str):
        self.label = label

    def error(self, key: str, problem: str) -> SpecError:
        return SpecError(problem, path=self.label, key=key)

    def keys(self, table: Any, allowed: set[str], where: str) -> dict:
        if not isinstance(table, dict):
            raise self.error(where, f"expected a table, got {type(table).__name__}")
        for key in table:
            if key not in allowed:
                close = did_you_mean(key, allowed)
                hint = f" — did you mean '{close}'?" if close else f" (allowed: {', '.join(sorted(allowed))})"
                raise self.error(f"{where}.{key}" if where else key, f"unknown key{hint}")
        return table

    def expr(self, source: Any, key: str):
        try:
            return parse(source)
        except ExprError as exc:
            raise self.error(key, str(exc)) from None

    def name(self, name: str, key: str) -> str:
        if not _IDENT.match(name) or name.startswith("__"):
            raise self.error(key, f"'{name}' is not a valid name (letters, digits and _, not starting with a digit or __)")
        return name

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, got {value!r}")
        return value

    def str_list(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise self.error(key, "expected a list of strings")
        return tuple(str(v) for v in value)

    def number(self, value: Any, key: str, positive: bool = True) -> float:
        """A finite number (TOML's nan and inf are refused), > 0 when ``positive``."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (positive and value <= 0):
            raise self.error(key, f"expected a {'positive ' if positive else ''}number, got {value!r}")
        if not math.isfinite(value):
            raise self.error(key, f"expected a {'positive ' if positive else ''}finite number, got {value!r}")
        return value

    def at_least(self, value: Any, key: str, minimum: float) -> float:
        """A finite number >= minimum (e.g. a tolerance >= 0)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise self.error(key, f"expected a number >= {minimum:g}, got {value!r}")
        if not math.isfinite(value):
            raise self.error(key, f"expected a finite number >= {minimum:g}, got {value!r}")
        return value

    def integer(self, value: Any, key: str, minimum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
            bound = f" >= {minimum}" if minimum is not None else ""
            raise self.error(key, f"expected an integer{bound}, got {value!r}")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value
