"""The seed's sorted table: parameters, REGS, SPILL, SMEM_KB, metrics, CHECKSUM, STATUS."""

from __future__ import annotations

import sys
from typing import Iterable, Sequence

from rich.console import Console
from rich.table import Table

from ..result import Result
from ..status import Status
from .rank import group_results, rank

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
    groups = group_results(results)
    for (variant, shape, gpu, phase), rows in groups.items():
        ranked = rank(rows, objective, direction)
        names = (param_order or {}).get((variant, shape)) or list(ranked[0].params)
        ok = [r for r in ranked if r.status is Status.OK]
        failed = [r for r in ranked if r.status is not Status.OK]
        shown_ok = ok[:top] if top else ok
        metrics = metric_columns(ok or ranked, objective)
        has_checksum = any("checksum" in r.metrics for r in ranked)
        title = f"variant {variant} · shape {shape}" + (f" · {gpu}" if gpu else "") + (
            f" · phase {phase}" if phase else "") + title_suffix
        title += f" — {len(ok)} ok, {len(failed)} failed or pruned"
        table = Table(title=title, title_justify="left", show_edge=False, box=None, padding=(0, 1),
                      header_style="bold")
        for n in names:
            table.add_column(n, justify="right", no_wrap=True)
        for col in ("REGS", "SPILL", "SMEM_KB"):
            table.add_column(col, justify="right")
        for m in metrics:
            table.add_column(m.upper(), justify="right")
        if has_checksum:
            table.add_column("CHECKSUM", justify="right")
        table.add_column("STATUS", no_wrap=True)
        for i, r in enumerate(shown_ok):
            status = "[bold green]BEST[/]" if i == 0 else "ok"
            table.add_row(*_row(r, names, metrics, has_checksum), status)
        for r in (failed[: max(top or 0, 20)] if top else failed):
            status = f"[red]{r.status.value}[/]" if r.status is not Status.PRUNED else "[dim]PRUNED[/]"
            table.add_row(*_row(r, names, metrics, has_checksum), f"{status} {r.message}")
        console.print(table)
        hidden = len(failed) - (max(top or 0, 20) if top else len(failed))
        if hidden > 0:
            console.print(f"  … {hidden} more failed or pruned configs (see the CSV)")
        console.print()


def _row(r: Result, names, metrics, has_checksum) -> list[str]:
    cells = [_fmt(r.params.get(n)) for n in names]
    cells += [_fmt(r.regs), _fmt(r.spills), _fmt(round(r.smem / 1024) if r.smem is not None else None)]
    cells += [_fmt(r.metrics.get(m)) for m in metrics]
    if has_checksum:
        cells.append(_fmt(r.metrics.get("checksum")))
    return cells
