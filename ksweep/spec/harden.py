"""``[harden]`` read and checked (spec/model.py's ``Harden``)."""

from __future__ import annotations

from typing import Any

from .context import Ctx
from .model import SANITIZER_TOOLS, SPECIAL_INPUTS, Harden
from .names import did_you_mean


def harden_from_dict(ctx: Ctx, spec: Any) -> Harden:
    table = ctx.keys(spec, {"enabled", "tools", "timeout", "deterministic", "special", "edge", "sizes", "budget",
                                     "jobs"}, "harden")
    default = Harden()

    def names(key: str, known: tuple[str, ...], given) -> tuple[str, ...]:
        listed = ctx.str_list(given, f"harden.{key}")
        for name in listed:
            if name not in known:
                close = did_you_mean(name, known)
                raise ctx.error(f"harden.{key}", f"unknown {key[:-1] if key == 'tools' else 'input'} {name!r}"
                                + (f" — did you mean '{close}'?" if close else f" (known: {', '.join(known)})"))
        return tuple(dict.fromkeys(listed))

    return Harden(
        enabled=ctx.boolean(table.get("enabled", default.enabled), "harden.enabled"),
        tools=names("tools", SANITIZER_TOOLS, table["tools"]) if "tools" in table else default.tools,
        timeout=ctx.number(table["timeout"], "harden.timeout") if "timeout" in table else None,
        deterministic=ctx.boolean(table.get("deterministic", default.deterministic), "harden.deterministic"),
        special=names("special", SPECIAL_INPUTS, table["special"]) if "special" in table else default.special,
        edge=_replacing(ctx, table.get("edge", {}), "edge"),
        sizes=_replacing(ctx, table.get("sizes", {}), "sizes"),
        budget=ctx.number(table["budget"], "harden.budget") if "budget" in table else None,
        jobs=ctx.integer(table["jobs"], "harden.jobs", minimum=1) if "jobs" in table else None,
    )


def _replacing(ctx: Ctx, table: Any, key: str) -> dict:
    """``edge = { N = 4099 }`` or ``sizes = { N = 512 }``: names and the numbers (or strings)
    that replace a shape's."""
    values = ctx.keys(table, set(table) if isinstance(table, dict) else set(), f"harden.{key}")
    for name, value in values.items():
        ctx.name(name, f"harden.{key}.{name}")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ctx.error(f"harden.{key}.{name}", f"expected a number or a string, got {value!r}")
    return dict(values)
