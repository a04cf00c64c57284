"""The seed's sorted table: parameters, REGS, SPILL, SMEM_KB, metrics, CHECKSUM, STATUS."""

from __future__ import annotations

import math
import sys
from typing import Iterable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..result import Result
from ..status import Status
from .rank import finite_value, group_results, rank, unranked_reason

_HIDDEN_METRICS = {"checksum"}


def wide_console() -> Console:
    """A terminal's own width; a wide page for files and pipes, so tables are not squeezed."""
    return Console() if sys.stdout.isatty() else Console(width=240)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)  # nan, inf, -inf
        if v == int(v) and abs(v) >= 1000:
            return f"{v:.1f}"
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.6g}"
    return str(v)


def metric_columns(results: Sequence[Result], objective: str) -> list[str]:
    keys: list[str] = [objective]
    for r in results:
        for k in r.metrics:
            if k not in keys and k not in _HIDDEN_METRICS:
                keys.append(k)
    return keys


def render(results: Iterable[Result], objective: str, direction: str, console: Console,
           param_order: dict[tuple[str, str], list[str]] | None = None, top: int | None = None,
           title_suffix: str = "") -> None:
    """One table per variant × shape (× GPU model × phase). ``top`` N > 0 shows the N best
    valid configs and at most N of the others, with a line counting the rest; None or 0
    shows every row."""
    limit = top if top and top > 0 else None
    groups = group_results(results)
    for (variant, shape, gpu, phase), rows in groups.items():
        ranked = rank(rows, objective, direction)
        names = (param_order or {}).get((variant, shape)) or list(ranked[0].params)
        ok = [r for r in ranked if finite_value(r, objective) is not None]
        # OK rows whose objective is missing or not finite (older databases): never ranked
        unranked = [r for r in ranked if r.status is Status.OK and finite_value(r, objective) is None]
        failed = [r for r in ranked if r.status is not Status.OK]
        others = unranked + failed
        shown_ok = ok[:limit]
        shown_others = others[:limit]
        metrics = metric_columns(ok or ranked, objective)
        has_checksum = any("checksum" in r.metrics for r in ranked)
        title = f"variant {variant} · shape {shape}" + (f" · {gpu}" if gpu else "") + (
            f" · phase {phase}" if phase else "") + title_suffix
        title += f" — {len(ok)} ok, {len(failed)} failed or pruned"
        if unranked:
            title += f", {len(unranked)} unranked"
        table = Table(title=escape(title), title_justify="left", show_edge=False, box=None, padding=(0, 1),
                      header_style="bold")
        for n in names:
            table.add_column(escape(n), justify="right", no_wrap=True)
        for col in ("REGS", "SPILL", "SMEM_KB"):
            table.add_column(col, justify="right")
        for m in metrics:
            table.add_column(escape(m.upper()), justify="right")
        if has_checksum:
            table.add_column("CHECKSUM", justify="right")
        table.add_column("STATUS", no_wrap=True)
        for i, r in enumerate(shown_ok):
            status = "[bold green]BEST[/]" if i == 0 else "ok"
            table.add_row(*_row(r, names, metrics, has_checksum), status)
        for r in shown_others:
            if r.status is Status.OK:
                status = f"[yellow]OK[/] {escape(unranked_reason(r, objective))}: not ranked"
            elif r.status is Status.PRUNED:
                status = f"[dim]PRUNED[/] {escape(r.message)}"
            else:
                status = f"[red]{r.status.value}[/] {escape(r.message)}"
            table.add_row(*_row(r, names, metrics, has_checksum), status)
        console.print(table)
        note = _more_note(len(ok) - len(shown_ok), others[len(shown_others):])
        if note:
            console.print(note, soft_wrap=True)
        console.print()


def _more_note(more_ok: int, hidden: Sequence[Result]) -> str:
    """'  … and 3 more ok, 12 more failed (ksweep report --top 0 / --all)', or ''."""
    parts = []
    if more_ok > 0:
        parts.append(f"{more_ok} more ok")
    unranked = sum(r.status is Status.OK for r in hidden)
    if unranked:
        parts.append(f"{unranked} more unranked")
    if len(hidden) > unranked:
        pruned = sum(r.status is Status.PRUNED for r in hidden)
        parts.append(f"{len(hidden) - unranked} more failed" + (" or pruned" if pruned else ""))
    if not parts:
        return ""
    return escape(f"  … and {', '.join(parts)} (ksweep report --top 0 / --all)")


def _row(r: Result, names, metrics, has_checksum) -> list[str]:
    cells = [_fmt(r.params.get(n)) for n in names]
    cells += [_fmt(r.regs), _fmt(r.spills), _fmt(round(r.smem / 1024) if r.smem is not None else None)]
    cells += [_fmt(r.metrics.get(m)) for m in metrics]
    if has_checksum:
        cells.append(_fmt(r.metrics.get("checksum")))
    return [escape(c) for c in cells]
