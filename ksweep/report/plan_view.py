"""Rendering of a Plan for people."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table


def print_plan(spec, plan, console: Console | None = None) -> None:
    console = console or Console()
    console.print(f"[bold]{spec.name}[/bold] ({spec.label}): {plan.total:,} configs, "
                  f"{plan.valid:,} valid, {plan.total - plan.valid:,} pruned", soft_wrap=True)
    for e in plan.entries:
        console.print()
        console.print(f"[bold]shape {e.shape} · variant {e.variant}[/bold]: "
                      f"{e.total:,} raw → {e.valid:,} valid", soft_wrap=True)
        table = Table(show_edge=False, box=None, padding=(0, 2))
        table.add_column("pruned by (first failed constraint)")
        # counts are exact, however long (a raw space may pass 2**63): never cut short
        widest = max((len(f"{n:,}") for n in e.pruned.values()), default=0)
        table.add_column("configs", justify="right", no_wrap=True, min_width=max(widest, 7))
        for name, n in e.pruned.items():
            table.add_row(name, f"{n:,}")
        console.print(table)
        if e.examples:
            # one column per config: parameter and derived names run down the side
            ex = Table(show_edge=False, box=None, padding=(0, 2), title_justify="left",
                       title=f"first {len(e.examples)} valid configs")
            ex.add_column("", no_wrap=True)
            for i in range(len(e.examples)):
                ex.add_column(f"#{i + 1}", justify="right")
            params, derived = e.examples[0]
            for name in params:
                ex.add_row(name, *(str(p[name]) for p, _ in e.examples))
            for name in derived:
                ex.add_row(f"[dim]{name}[/dim]", *(f"[dim]{d[name]}[/dim]" for _, d in e.examples))
            console.print(ex)
