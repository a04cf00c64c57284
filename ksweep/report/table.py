"""The seed's sorted table: parameters, REGS, SPILL, SMEM_KB, metrics, CHECKSUM, STATUS."""

from __future__ import annotations

import math
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..build.demangle import short_name
from ..job import config_id
from ..verify.confirm import Confirmed

from ..result import Result
from ..status import Status
from ..store.ranking import finite_value, rank
from .rank import group_results, unranked_reason

_HIDDEN_METRICS = {"checksum", "outputs_digest"}


def wide_console() -> Console:
    """A terminal's own width; a wide page for files and pipes, so tables are not squeezed.
    Lines end where their text ends: rich pads a table's rows to its width, and the spaces
    (before any closing colour codes) are cut as the lines are written."""
    out = _Trimmed(sys.stdout)
    return Console(file=out, force_terminal=True) if sys.stdout.isatty() else Console(file=out, width=240)


_TRAILING = re.compile(r" +((?:\x1b\[[0-9;]*m)*)(?=\n)")


class _Trimmed:
    """A text stream that drops the spaces ending each line written to it."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_TRAILING.sub(r"\1", text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()


def fmt_cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)  # nan, inf, -inf
        if 1000 <= abs(v) < 1e15:  # every digit of the integer part, one decimal
            return f"{v:.1f}"
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:.6g}"
    return str(v)


def metric_columns(results: Sequence[Result], objective: str) -> list[str]:
    keys: list[str] = [objective]
    for r in results:
        for k in r.metrics:
            if k not in keys and k not in _HIDDEN_METRICS:
                keys.append(k)
    return keys


@dataclass
class Row:
    """One row of a results table: its result, the plain text of its cells (STATUS and NOTE
    apart), its status as shown (BEST, TIE, ok, OK, PRUNED, a failure's name) and its note."""

    result: Result
    cells: list[str]
    status: str
    note: str
    ranked: bool  # among the valid configs with a value (ranked), not the unranked or failed ones


@dataclass
class TableGroup:
    """One table: a variant × shape (× GPU model × phase), every row in the order shown,
    the valid ones first (BEST and TIE where the store's confirmation names them)."""

    variant: str
    shape: str
    gpu: str | None
    phase: str | None
    title: str
    headers: list[str]  # the cells' columns, STATUS last (NOTE apart)
    rows: list[Row]
    names: list[str]  # the parameter columns
    metrics: list[str]  # the metric columns
    confirmed: bool  # with MEDIAN, CI95 and N columns
    confirmation: str | None = None  # the confirmation's line, under the table that holds BEST

    @property
    def ok(self) -> list[Row]:
        return [r for r in self.rows if r.ranked]

    @property
    def others(self) -> list[Row]:
        return [r for r in self.rows if not r.ranked]


def table_groups(results: Iterable[Result], objective: str, direction: str,
                 param_order: dict[tuple[str, str], list[str]] | None = None, title_suffix: str = "",
                 confirmations: Mapping[tuple[str, str], Confirmed] | None = None,
                 best: bool = True) -> list[TableGroup]:
    """The tables ``render`` prints (and ``ksweep report --html`` shows), every row of each:
    see ``render``. BEST and TIE are the confirmation's where it ran (store/standings.py's
    rule), else BEST is the first valid row."""
    groups = group_results(results)
    said: set[tuple[str, str]] = set()  # the shape × variants whose confirmation line is given
    out = []
    for (variant, shape, gpu, phase), rows in groups.items():
        ranked = rank(rows, objective, direction)
        names = param_names(param_order, variant, shape, ranked)
        ok = [r for r in ranked if finite_value(r, objective) is not None]
        # OK rows whose objective is missing or not finite (older databases): never ranked
        unranked = [r for r in ranked if r.status is Status.OK and finite_value(r, objective) is None]
        failed = [r for r in ranked if r.status is not Status.OK]
        conf = (confirmations or {}).get((variant, shape))
        marks = conf.verdicts if conf else {}
        if marks:  # confirmed first, by their median; then the rest as ranked
            measured = [r for r in ok if config_id(r.params) in marks]
            sign = 1.0 if direction == "min" else -1.0
            measured.sort(key=lambda r: (marks[config_id(r.params)].mark not in ("BEST", "TIE"),
                                         sign * _median(marks[config_id(r.params)])))
            ok = measured + [r for r in ok if config_id(r.params) not in marks]
        metrics = metric_columns(ok or ranked, objective)
        has_checksum = any("checksum" in r.metrics for r in ranked)
        has_kernel = any(len(_judged(r)) > 1 for r in ranked)
        title = f"variant {variant} · shape {shape}" + (f" · {gpu}" if gpu else "") + (
            f" · phase {phase}" if phase else "") + title_suffix
        title += f" — {len(ok)} ok, {len(failed)} failed or pruned"
        if unranked:
            title += f", {len(unranked)} unranked"
        headers = [*names, "REGS", "SPILL", "SMEM_KB", *(["KERNEL"] if has_kernel else []),
                   *(m.upper() for m in metrics), *(["CHECKSUM"] if has_checksum else []),
                   *(["MEDIAN", "CI95", "N"] if marks else []), "STATUS"]
        body: list[Row] = []
        for i, r in enumerate(ok):
            cells = _row(r, names, metrics, has_checksum, has_kernel)
            note = "; ".join(n for n in (r.message, _throttled(r), _hardening_note(conf, r)) if n)  # e.g. unverified
            if marks:
                v = marks.get(config_id(r.params))
                cells += _confirm_cells(v)
                status = v.mark if v is not None and v.mark in ("BEST", "TIE") else "ok"
                if v is not None and v.failed:
                    note = f"{v.failed} confirmation run(s) failed" + (f"; {note}" if note else "")
                if conf.default == config_id(r.params):
                    note = "the default config" + (f"; {note}" if note else "")
            else:
                status = "BEST" if i == 0 and best else "ok"
            body.append(Row(r, cells, status, note, True))
        for r in unranked + failed:
            if r.status is Status.OK:
                status, note = "OK", f"{unranked_reason(r, objective)}: not ranked"
            else:
                status, note = r.status.value, r.message
            cells = _row(r, names, metrics, has_checksum, has_kernel) + (["-", "-", "-"] if marks else [])
            body.append(Row(r, cells, status, one_line(note), False))
        line = None
        ids = {config_id(r.params) for r in rows}
        if conf is not None and conf.verdicts and (variant, shape) not in said and (
                conf.best in ids or conf.best is None and ids & set(conf.verdicts)):
            # once, under the table that holds BEST (a phased search has one per phase)
            said.add((variant, shape))
            line = confirmation_line(conf)
        out.append(TableGroup(variant, shape, gpu, phase, title, headers, body, names, metrics, bool(marks), line))
    return out


_MARKUP = {"BEST": "[bold green]BEST[/]", "TIE": "[green]TIE[/]", "ok": "ok", "OK": "[yellow]OK[/]",
           "PRUNED": "[dim]PRUNED[/]"}


def render(results: Iterable[Result], objective: str, direction: str, console: Console,
           param_order: dict[tuple[str, str], list[str]] | None = None, top: int | None = None,
           title_suffix: str = "", confirmations: Mapping[tuple[str, str], Confirmed] | None = None,
           best: bool = True) -> None:
    """One table per variant × shape (× GPU model × phase). ``top`` N > 0 shows the N best
    valid configs and at most N of the others, with a line counting the rest; None or 0
    shows every row.

    Numbers are never cut: every parameter, resource and metric column is as wide as its
    widest cell, and the table is printed wider than the console when it must be. Only
    messages give way: shortened in the NOTE column when it has room (kernel names
    demangled and shortened), otherwise numbered and listed under the table.

    With ``confirmations`` (confirm.confirmed) the confirmed configs come first, by the
    median of their confirmation runs, with MEDIAN, CI95 and N columns; BEST and TIE are
    theirs alone (a config measured once is never BEST when others were confirmed), and a
    line under the table gives the best's speed-up over the default. ``best=False``: rows in
    the same order, none marked BEST (results not ranked against the current ones)."""
    limit = top if top and top > 0 else None
    for group in table_groups(results, objective, direction, param_order, title_suffix, confirmations, best):
        ok, others = group.ok, group.others
        shown = ok[:limit] + others[:limit]
        headers = group.headers
        body = [(row.cells, _MARKUP.get(row.status, f"[red]{row.status}[/]"), row.note) for row in shown]

        widths = [len(h) for h in headers]
        for cells, status, _ in body:
            for j, c in enumerate([*cells, Text.from_markup(status).plain]):
                widths[j] = max(widths[j], len(c))
        needed = sum(w + 2 for w in widths)
        notes = [n for _, _, n in body if n]
        room = console.width - needed - 2
        footnotes: dict[str, int] = {}
        in_column = bool(notes) and room >= _MIN_NOTE
        if notes and not in_column:  # room for the footnote marks: ' [12]'
            widths[-1] += len(f" [{len(set(notes))}]")
            needed += len(f" [{len(set(notes))}]")
        # the title on a line of its own: a table's title wraps at the table's width, mid-phrase
        console.print(f"[italic]{escape(group.title)}[/italic]", soft_wrap=True)
        table = Table(show_edge=False, box=None, padding=(0, 1), header_style="bold")
        for j, h in enumerate(headers):
            justify = "left" if h in ("STATUS", "KERNEL") else "right"
            table.add_column(escape(h), justify=justify, no_wrap=True, min_width=widths[j])
        if in_column:
            table.add_column("NOTE", no_wrap=True, overflow="ellipsis",
                             max_width=min(room, max(len(n) for n in notes)))
        for cells, status, note in body:
            row = [escape(c) for c in cells]
            if in_column:
                table.add_row(*row, status, escape(note))
            elif note:
                mark = footnotes.setdefault(note, len(footnotes) + 1)
                table.add_row(*row, f"{status} [{mark}]")
            else:
                table.add_row(*row, status)
        with _at_least(console, needed + (min(room, max(map(len, notes))) + 2 if in_column else 0)):
            console.print(table)
        for note, mark in footnotes.items():
            console.print(escape(_cut(f"  [{mark}] {note}", _MAX_NOTE)), soft_wrap=True)
        note = _more_note(len(ok) - len(ok[:limit]), [r.result for r in others[len(others[:limit]):]])
        if note:
            console.print(note, soft_wrap=True)
        if group.confirmation is not None:
            console.print(escape(group.confirmation), soft_wrap=True)
        console.print()


_MIN_NOTE = 24  # narrower than this, messages go under the table
_MAX_NOTE = 400  # a footnote longer than this is cut (the full message: ksweep report --format csv)
_MANGLED = re.compile(r"\b_Z\w+")


def one_line(message: str) -> str:
    """A message on one line, mangled kernel names demangled and shortened."""
    text = " ".join((message or "").split())
    return _MANGLED.sub(lambda m: short_name(m.group(0)), text)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@contextmanager
def _at_least(console: Console, width: int):
    """Print wider than the console when a table needs it: numbers are never cut."""
    old = console.width
    if width > old:
        console.width = width
    try:
        yield
    finally:
        console.width = old


def confirmation_line(conf: Confirmed) -> str:
    """'  confirmed: 6 configs × 3 rounds; BEST is 1.27x the default (95% interval 1.21-1.33); 1 TIE'."""
    ties = sum(v.mark == "TIE" for v in conf.verdicts.values())
    n = len(conf.verdicts)
    # a confirmation cut short (Ctrl-C) leaves some configs with fewer rounds: the range, not the plan
    fewest = min((v.interval.n + v.failed for v in conf.verdicts.values()), default=conf.rounds)
    rounds = f"{fewest}-{conf.rounds} rounds" if fewest < conf.rounds else \
        f"{conf.rounds} round{'s' if conf.rounds != 1 else ''}"
    text = f"  confirmed: {n} config{'s' if n != 1 else ''} x {rounds}"
    if conf.best is None:
        # runs that all ended OK, then barred (the hardening found it UNSAFE, --deterministic)
        barred = [v for v in conf.verdicts.values() if v.ineligible and not v.failed and v.interval.n]
        if barred:
            why = ", ".join(sorted({v.ineligible for v in barred}))
            return text + f"; the {len(barred)} that passed every confirmation run may not be BEST ({why}): no BEST"
        return text + "; no config passed every confirmation run: no BEST"
    if conf.speedup is not None and conf.best != conf.default:
        s = conf.speedup
        spread = (f"95% interval {s.lo:.3g}-{s.hi:.3g}" if s.n >= 2
                  else "one round: no interval, --confirm K,R with R of 2 or more gives one")
        text += f"; BEST is {s.median:.3g}x the default ({spread})"
    elif conf.best == conf.default:
        text += "; BEST is the default config"
    return text + (f"; {ties} TIE (not told apart from BEST by the measurements)" if ties else "")


def _median(v) -> float:
    return v.interval.median if v.interval.n else math.inf


def _confirm_cells(v) -> list[str]:
    if v is None or not v.interval.n:
        return ["-", "-", "0" if v is not None else "-"]
    iv = v.interval
    return [fmt_cell(iv.median), iv.spread() or "-", str(iv.n)]


def _hardening_note(conf: Confirmed | None, r: Result) -> str:
    """'nondeterministic: checksum 1.0 in one run, 1.1 in another (...)', 'not BEST: ...', or ''."""
    if conf is None:
        return ""
    cid = config_id(r.params)
    v = conf.verdicts.get(cid)
    notes = [f"nondeterministic: {conf.nondeterministic(cid)}"] if conf.nondeterministic(cid) else []
    if v is not None and v.ineligible and v.ineligible != "nondeterministic":
        notes.append(f"may not be BEST: {v.ineligible}")
    elif v is not None and v.ineligible:
        notes.append("may not be BEST (--deterministic)")
    tools = conf.hardening.get(cid, {}).get("sanitizer")
    if tools is not None and tools.verdict == "incomplete":
        notes.append(f"not hardened: {tools.detail}")
    return "; ".join(notes)


def _throttled(r: Result) -> str:
    """'throttled (power cap)' when the GPU state of the run says so."""
    state = r.gpu_state or {}
    if not state.get("throttled"):
        return ""
    reasons = ", ".join(state.get("throttle_reasons", ()))
    return f"measured while throttled: {reasons}" if reasons else "measured while throttled"


def _judged(r: Result) -> list[dict]:
    return [k for k in r.kernels if isinstance(k, dict) and k.get("judged", True)]


def _kernel_cell(r: Result) -> str:
    """The kernel REGS comes from (the judged kernel with the most registers), shortened."""
    judged = _judged(r)
    if len(judged) <= 1:
        return short_name(judged[0]["name"], 32) if judged else "-"
    worst = max(judged, key=lambda k: k.get("registers") or 0)
    return short_name(worst["name"], 32) + f" (+{len(judged) - 1})"


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


def param_names(param_order: Mapping[tuple[str, str], list[str]] | None, variant: str, shape: str,
                rows: Sequence[Result]) -> list[str]:
    """The parameter columns of one table: the spec's order as the sweep kept it, then any
    other parameter a row has (one the spec no longer has: its results must not read alike)."""
    names = list((param_order or {}).get((variant, shape)) or ())
    return names + list(dict.fromkeys(n for r in rows for n in r.params if n not in names))


def _row(r: Result, names, metrics, has_checksum, has_kernel=False) -> list[str]:
    """The plain text of a row's cells, STATUS and NOTE apart."""
    cells = [fmt_cell(r.params.get(n)) for n in names]
    cells += [fmt_cell(r.regs), fmt_cell(r.spills), fmt_cell(round(r.smem / 1024) if r.smem is not None else None)]
    if has_kernel:
        cells.append(_kernel_cell(r))
    cells += [fmt_cell(r.metrics.get(m)) for m in metrics]
    if has_checksum:
        cells.append(fmt_cell(r.metrics.get("checksum")))
    return cells
