"""Rendering of a Plan for people, with what the database already knows of spilling configs."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..result import Result
from ..space.space import Space
from ..status import Status
from .progress import spilled_line
from .table import wide_console


def spilled(spec, results: Iterable[Result]) -> dict[tuple[str, str], int]:
    """(variant, shape) -> configs a database holds as SPILLS (built, their kernels spilled,
    not run) that the spec still makes valid: what ``allow_spills = false`` skips. ``plan``
    compiles nothing, so it knows this only from an earlier sweep."""
    rows: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for r in results:
        if r.status is Status.SPILLS:
            rows[(r.variant, r.shape)].append(r)
    shapes, variants = {s.name for s in spec.shape_list()}, {v.name for v in spec.variant_list()}
    out = {}
    for (variant, shape), found in rows.items():
        if variant not in variants or shape not in shapes:
            continue
        space = Space.from_spec(spec, shape, variant)
        n = sum(set(r.params) == set(space.names) and dict(r.params) in space for r in found)
        if n:
            out[(variant, shape)] = n
    return out


def spilled_note(n: int, allow_spills: bool) -> str:
    """What ``plan`` says of the ``n`` valid configs the database holds as SPILLS."""
    if allow_spills:
        return (f"{n} config{'s' if n != 1 else ''} stored as SPILLS by an earlier sweep will run "
                f"([build] allow_spills = true)")
    return f"{spilled_line(n)}, as the last sweep found (the database)"


def print_plan(spec, plan, console: Console | None = None,
               spills: Mapping[tuple[str, str], int] | None = None) -> None:
    """The plan; ``spills`` (``spilled``): per shape × variant, the valid configs the database
    holds as SPILLS."""
    console = console or wide_console()  # lines end where their text ends
    console.print(f"[bold]{spec.name}[/bold] ({spec.label}): {plan.total:,} configs, "
                  f"{plan.valid:,} valid, {plan.total - plan.valid:,} pruned", soft_wrap=True)
    if getattr(spec, "description", ""):
        console.print(escape(spec.description), soft_wrap=True)
    for e in plan.entries:
        console.print()
        console.print(f"[bold]shape {e.shape} · variant {e.variant}[/bold]: "
                      f"{e.total:,} raw → {e.valid:,} valid", soft_wrap=True)
        if e.pruned:  # (no header over nothing when no constraint pruned a config)
            table = Table(show_edge=False, box=None, padding=(0, 2))
            table.add_column("pruned by (first failed constraint)")
            # counts are exact, however long (a raw space may pass 2**63): never cut short
            widest = max((len(f"{n:,}") for n in e.pruned.values()), default=0)
            table.add_column("configs", justify="right", no_wrap=True, min_width=max(widest, 7))
            for name, n in e.pruned.items():
                table.add_row(name, f"{n:,}")
            console.print(table)
        n = (spills or {}).get((e.variant, e.shape))
        if n:
            console.print(escape(spilled_note(n, spec.build.allow_spills)), soft_wrap=True)
        if e.examples:
            _print_examples(console, e.examples)
    if unchecked(spec):
        console.print()
        console.print(escape(NO_CHECK), soft_wrap=True)


NO_CHECK = ("warning: no [check]: a config that prints a wrong checksum ranks as a right one; add [check] "
            "reference = \"defaults\" (every config's checksum against the default config's) or expected values "
            "(docs/spec.md)")


def unchecked(spec) -> bool:
    """A program-mode spec whose runs nothing checks (kernel mode checks its outputs itself)."""
    return getattr(spec, "kernel", None) is None and not spec.check.active


def _value(v) -> str:
    """A value as the tables show it (a switch on or off), every digit of a number kept."""
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def _print_examples(console: Console, examples) -> None:
    """One column per config, parameter and derived names down the side; values are never
    cut: configs that do not fit the console's width go to a further table below."""
    params, derived = examples[0]
    names = [*params, *derived]
    label = max(len(n) for n in names) if names else 0
    cells = [[_value(p[n]) for n in params] + [_value(d[n]) for n in derived] for p, d in examples]
    widths = [max(len(f"#{i + 1}"), *(len(c) for c in col)) for i, col in enumerate(cells)]
    start = 0
    while start < len(examples):
        used, end = label + 4, start
        while end < len(examples) and (end == start or used + widths[end] + 4 <= console.width):
            used += widths[end] + 4
            end += 1
        title = (f"first {len(examples)} valid configs" if start == 0 else "") + (
            f" (#{start + 1}–#{end})" if end - start < len(examples) else "")
        ex = Table(show_edge=False, box=None, padding=(0, 2), title_justify="left", title=title or None)
        ex.add_column("", no_wrap=True, min_width=label)
        for i in range(start, end):
            ex.add_column(f"#{i + 1}", justify="right", no_wrap=True, min_width=widths[i])
        for j, name in enumerate(names):
            style = "dim" if j >= len(params) else ""
            row = [cells[i][j] for i in range(start, end)]
            ex.add_row(*((f"[dim]{escape(x)}[/dim]" for x in [name, *row]) if style else
                         (escape(x) for x in [name, *row])))
        console.print(ex)
        start = end
