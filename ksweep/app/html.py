"""``ksweep report --html`` and ``ksweep run --html``: a results database as one
self-contained HTML page (``report/html_page.py`` renders it, ``report/html_model.py``
shapes its data).

The page reads everything here: the standings (store/standings.py: BEST and TIE as the
terminal table marks them), the history timeline, the stored profiles, what ``explain``
says of the leaders, what ``insights`` finds, and the sweep's context. While a sweep runs,
``LivePage`` rewrites the page (each write atomic: ``Output.write``) as results arrive,
with its progress, its ETA and the best so far, at most every few seconds and for at most
a tenth of the sweep's time; the page of a finished sweep is the one ``page_of`` gives.

The charting library is plotly.js, as the optional ``plotly`` package ships it
(``pip install 'ksweep[html]'``): MIT-licensed, one script of about 4.8 MB (1.5 MB once
compressed), drawing the heat-maps, lines and scatter plots as SVG the page's DOM holds.
"""

from __future__ import annotations

import functools
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from .. import version
from ..build.demangle import short_name
from ..errors import KsweepError, require
from ..job import config_id
from ..report import html_model as model
from ..report.edited import edited_notes
from ..report.explain import render as explain_text
from ..report.history import timeline
from ..report.html_page import Leader, Library, Page, Section, pack, render_page
from ..report.insights_view import target_lines
from ..report.profile_view import profile_lines
from ..report.progress import best_text, eta_text
from ..report.rank import unverified_notes
from ..report.table import fmt_cell, param_names, table_groups
from ..status import Status
from ..store import standings as standings_of
from ..store.sqlite import Store
from .outputs import Output, checked_output, db_inputs
from .report import check_names

LEADERS = 3  # without a confirmation, the leaders are the best this many single measurements


@functools.lru_cache(maxsize=1)
def library() -> Library:
    """plotly.js from the installed ``plotly`` package, compressed once per process; a
    MissingDependency (one line with the pip command) when it is not installed."""
    plotly = require("plotly", "html", "an HTML report (--html)")
    from plotly.offline import get_plotlyjs, get_plotlyjs_version

    js = get_plotlyjs()
    notice = js[:js.index("*/") + 2] if js.startswith("/*") and "*/" in js else ""
    return Library("plotly.js", get_plotlyjs_version(), notice, f"plotly {plotly.__version__}",
                   pack(js.encode("utf-8")))


def html_output(path: str, db: str | Path, *, force: bool = False, reads=()) -> Output:
    """The page ``--html`` names, checked before any work: never the database, its spec or a
    source it builds (nor ``reads``), an existing file only with ``force``."""
    return checked_output(path, option="--html", force=force, reads=[*db_inputs(db), *reads])


def write_page(db: str | Path, out: Output, *, shape: str | None = None, variant: str | None = None,
               live: list[str] | None = None) -> Path:
    """Write the page of ``db`` to ``out`` at once (a file renamed over the target)."""
    lib = library()
    return out.write(render_page(page_of(db, shape=shape, variant=variant, live=live), lib))


def page_of(db: str | Path, *, shape: str | None = None, variant: str | None = None,
            live: list[str] | None = None) -> Page:
    """The page of ``db`` (its shape × variants that ``shape`` and ``variant`` name). With
    ``live`` (a running sweep's progress lines), the page reloads itself, and the leaders'
    facts and the insights, which take longer, wait for the end."""
    source = str(Path(db).resolve())
    with Store(db, create=False) as store, store.snapshot():
        check_names(store, shape, variant)
        found = standings_of.read(store, variant, shape)
        orders = store.param_orders()
        objectives = store.objectives()
        profiled = store.profiles(variant, shape)
        superseded = len(store.superseded(variant, shape))
        history = timeline(store.history(variant, shape), store.measurements(variant, shape),
                           found.objective.metric, found.objective.direction)
        meta = {k: store.get_meta(k) for k in ("spec", "spec_name", "spec_text", "ksweep_version")}
        leaders = {key: _leaders(store, s) for key, s in found.items()} if live is None else {}
    objective = found.objective
    results = found.results
    groups = table_groups(results, objective.metric, objective.direction, orders,
                          confirmations=found.confirmations)
    found_insights, insights_note = _insights(source, shape, variant) if live is None and results else ({}, None)
    explained: dict[tuple[str, str], tuple[list[Leader], str | None]] = {}
    failing: list[str] = []  # one explain failure (no spec) is every leader's: said once, not tried again
    for key, chosen in leaders.items():
        explained[key] = _explained(source, chosen, failing, profiled)
    several = len({p.revision for pts in history.values() for p in pts}) > 1
    sections = []
    for key, standing in found.items():
        variant_, shape_ = key
        names = param_names(orders, variant_, shape_, standing.results)
        best = standing.best()
        sections.append(Section(
            variant_, shape_,
            tables=[model.table_data(g, found.confirmations.get(key)) for g in groups
                    if (g.variant, g.shape) == key],
            heat=model.heat_data(standing.results, names, objective.metric),
            best=model.best_data(best, standing.value(best, singles=True) if best is not None else None, names),
            convergence=model.convergence_data(standing.results, objective.metric, objective.direction, *key),
            pareto=model.pareto_data(results, objectives, orders, *key),
            history=model.history_data(history[key]) if several and len(history.get(key, ())) > 1 else None,
            insights=target_lines(found_insights[key], source) if key in found_insights else None,
            insights_note=insights_note,
            leaders=explained.get(key, ([], None))[0], leaders_note=explained.get(key, ([], None))[1]))
    name = meta["spec_name"] or Path(db).stem
    spec_text, spec_note = _spec(meta)
    return Page(
        title=f"ksweep · {name}", source=source,
        objective={"metric": objective.metric, "direction": objective.direction},
        objectives=[{"metric": o.metric, "direction": o.direction} for o in objectives],
        sections=sections, context=_context(meta, results, objectives, history, superseded),
        spec_text=spec_text, spec_note=spec_note, notes=_notes(results, superseded),
        banner=_banner(results, superseded), live=live)


# -- the leaders -------------------------------------------------------------------------------
def _leaders(store: Store, standing) -> list[tuple[str, object, object, int | None]]:
    """(mark, result, its value, result id) of the confirmation's BEST and TIEs, else of the
    best ``LEADERS`` single measurements."""
    conf = standing.confirmation
    chosen = []
    if standing.confirmed:
        marks = {c: v.mark for c, v in conf.verdicts.items() if v.mark in ("BEST", "TIE")}
        rows = sorted((r for r in standing.results if config_id(r.params) in marks and r.status is Status.OK),
                      key=lambda r: marks[config_id(r.params)] != "BEST")
        chosen = [(marks[config_id(r.params)], r) for r in rows]
    else:
        chosen = [("BEST" if i == 0 else f"#{i + 1}", r) for i, r in enumerate(standing.ranked()[:LEADERS])]
    return [(mark, r, standing.value(r, singles=True), store.result_id(r.variant, r.shape, config_id(r.params)))
            for mark, r in chosen]


def _explained(source: str, chosen, failing: list[str], profiled: list[dict]) -> tuple[list[Leader], str | None]:
    from .explain import explain

    out = []
    for mark, r, value, rid in chosen:
        config = " ".join(f"{k}={fmt_cell(v)}" for k, v in r.params.items())
        shown = "" if value is None else (f"{value.value:.6g}" + (" (confirmed median)" if value.confirmed else ""))
        if failing or rid is None:
            out.append(Leader(mark, config, shown, profile=tuple(_profile(profiled, r))))
            continue
        try:
            e = explain(source, [f"#{rid}"])
        except KsweepError as exc:
            failing.append(str(exc))
            out.append(Leader(mark, config, shown, profile=tuple(_profile(profiled, r))))
            continue
        occ = {k.kernel: k for k in e.occupancy}
        kernels = []
        for k in e.kernels:
            o = occ.get(k.get("name"))
            kernels.append((short_name(str(k.get("name", "?")), 60), fmt_cell(k.get("registers")),
                            fmt_cell((k.get("spill_stores") or 0) + (k.get("spill_loads") or 0)),
                            fmt_cell(k.get("smem") or 0),
                            "-" if o is None else (o.missing or f"{o.occupancy.occupancy:.0%} "
                                                   f"({o.occupancy.blocks_per_sm} blocks/SM)"),
                            "-" if o is None or o.occupancy is None else " and ".join(o.occupancy.binding)))
        out.append(Leader(mark, config, shown, tuple(kernels), explain_text(e),
                          tuple(profile_lines(e.profile)) if e.profile else tuple(_profile(profiled, r)),
                          "; ".join(e.notes) or None))
    note = f"explain: {failing[0]}" if failing else None
    return out, note


def _profile(profiled: list[dict], r) -> list[str]:
    mine = [p for p in profiled if (p["variant"], p["shape"]) == (r.variant, r.shape)
            and config_id(p["params"]) == config_id(r.params)]
    return profile_lines(mine[-1]) if mine else []


def _insights(source: str, shape, variant) -> tuple[dict, str | None]:
    from .insights import insights

    try:
        done = insights(source, shape=shape, variant=variant)
    except KsweepError as exc:
        return {}, f"ksweep insights: {exc}"
    return {(i.table.variant, i.table.shape): i for i in done.found}, "no evaluated config to learn from"


# -- the context -------------------------------------------------------------------------------
def _spec(meta: dict) -> tuple[str | None, str | None]:
    if meta.get("spec_text") is not None:
        return meta["spec_text"], f" ({meta['spec']})" if meta.get("spec") else ""
    path = meta.get("spec")
    if path and Path(path).is_file():
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace"), (
                f" ({path}, read when this page was written: the database was swept before ksweep kept the "
                f"spec's text, and the file may have changed since)")
        except OSError:
            pass
    if path:
        return None, f"the spec {path} is not there any more, and this database does not hold its text"
    return None, "the database names no spec file (a sweep given as a call, or a recorded dataset)"


def _when(t: float | None) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if t else "-"


def _context(meta: dict, results, objectives, history: dict, superseded: int) -> list[tuple[str, str]]:
    ran = [r for r in results if r.status is not Status.PRUNED]
    rows = [("spec", f"{meta.get('spec_name') or '-'}" + (f" ({meta['spec']})" if meta.get("spec") else ""))]
    rows.append(("objective" if len(objectives) < 2 else "objectives",
                 ", ".join(f"{o.metric} ({o.direction}: {'lower' if o.direction == 'min' else 'higher'} is better)"
                           for o in objectives)))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    rows.append(("configs", ", ".join(f"{n:,} {s}" for s, n in sorted(counts.items(), key=lambda kv: -kv[1]))
                 + (f"; {superseded:,} superseded (not shown)" if superseded else "") if counts else "none"))
    gpus = sorted({r.gpu_name for r in ran if r.gpu_name and r.gpu_name != "none"})
    rows.append(("GPU", ", ".join(gpus) if gpus else "none (the runs had no GPU)"))
    drivers = sorted({str(r.driver or (r.gpu_state or {}).get("driver_version")) for r in ran
                      if r.driver or (r.gpu_state or {}).get("driver_version")})
    rows.append(("driver", ", ".join(drivers) if drivers else "not recorded"))
    cuda = sorted({str(r.gpu_state["cuda_version"]) for r in ran if (r.gpu_state or {}).get("cuda_version")})
    rows.append(("CUDA", ", ".join(cuda) if cuda else "not recorded"))
    rows.append(("clocks seen", _clocks(ran)))
    revisions = list(dict.fromkeys(r.revision for r in ran if r.revision))
    times = len({p.revision for pts in history.values() for p in pts})
    rows.append(("source revision", (", ".join(revisions) if revisions else "not recorded")
                 + (f" (the history holds {times} revisions)" if times > 1 else "")))
    rows.append(("ksweep", f"swept with {meta.get('ksweep_version') or 'a version that did not record itself'}; "
                           f"this page by {version()}"))
    started = [r.started for r in ran if r.started]
    finished = [r.finished for r in ran if r.finished]
    rows.append(("date", f"{_when(min(started, default=None))} to {_when(max(finished, default=None))}"
                 if started or finished else "-"))
    return rows


def _clocks(ran) -> str:
    states = [r.gpu_state for r in ran if r.gpu_state]
    sm = [s["sm_clock_mhz"] for s in states if s.get("sm_clock_mhz") is not None]
    if not sm:
        return "not recorded (no NVML reading: runs without a GPU)"
    low = [s.get("sm_clock_min_mhz", s["sm_clock_mhz"]) for s in states if s.get("sm_clock_mhz") is not None]
    mem = [s["mem_clock_mhz"] for s in states if s.get("mem_clock_mhz") is not None]
    throttled = sum(bool(s.get("throttled")) for s in states)
    text = f"SM {min(sm)}-{max(sm)} MHz (each run's median; lowest sample {min(low)} MHz)"
    if mem:
        text += f", memory {min(mem)}-{max(mem)} MHz"
    return text + f"; {throttled} of {len(states)} runs throttled"


def _notes(results, superseded: int) -> list[str]:
    notes = [*edited_notes(results), *unverified_notes(results)]
    if superseded:
        notes.append(f"{superseded} superseded result{'s are' if superseded != 1 else ' is'} not shown: measured on "
                     "another source or spec, or not measured again yet by a --rerun all (ksweep report "
                     "--superseded lists them)")
    return notes


def _banner(results, superseded: int) -> str | None:
    if not results:
        return "no evaluated result yet" + (" (only superseded ones)" if superseded else "")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    if counts.get("OK"):
        return None
    failed = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"no config succeeded: {failed} (the tables give each one's message); nothing to chart"


# -- a sweep that runs -------------------------------------------------------------------------
class LivePage:
    """An observer that passes everything on to ``inner`` (the terminal's progress) and
    rewrites the page of ``db`` as results arrive: at most every ``every`` seconds, and
    never more than ``share`` of the time (a write that takes 1 s waits 10 s for the next
    at 0.1). ``final`` writes the finished page (as ``ksweep report --html``)."""

    def __init__(self, inner, db: str | Path, out: Output, *, metric: str, every: float = 2.0,
                 share: float = 0.1, clock: Callable[[], float] = time.monotonic):
        self.inner, self.db, self.out, self.metric = inner, db, out, metric
        self.every, self.share, self.clock = every, share, clock
        self.started = clock()
        self.total = self.done = self.fresh = self.resumed = 0
        self.best = None
        self.target = ""
        self.due = 0.0
        self.writes = 0

    def target_started(self, variant, shape, valid, total, planned=None):
        self.inner.target_started(variant, shape, valid, total, planned)
        self.total += valid if planned is None else planned
        self.target = f"variant {variant} · shape {shape}"
        self.write(force=self.writes == 0)

    def warm_started(self, variant, shape, sources):
        told = getattr(self.inner, "warm_started", None)
        if told is not None:
            told(variant, shape, sources)

    def build_started(self, job):
        self.inner.build_started(job)

    def result(self, result, best, resumed: bool = False):
        self.inner.result(result, best, resumed)
        self.done += 1
        self.fresh += not resumed
        self.resumed += bool(resumed)
        self.total = max(self.total, self.done)
        if best is not None:
            self.best = best
        self.write(force=self.done >= self.total)  # the last one planned: then the confirmation runs

    def finished(self, summary):
        self.inner.finished(summary)

    def progress(self) -> list[str]:
        eta = eta_text(self.started, self.fresh, self.done, self.total)
        return [f"{self.done:,} of {self.total:,} evaluated ({self.resumed:,} resumed) · {eta} · now {self.target}",
                "best so far: " + (best_text(self.best, self.metric)[len("best "):] if self.best else "none yet"),
                f"page written {datetime.now().strftime('%H:%M:%S')}"]

    def write(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now < self.due:
            return
        write_page(self.db, self.out, live=self.progress())
        cost = self.clock() - now
        self.writes += 1
        self.due = self.clock() + max(self.every, cost / self.share)

    def final(self) -> Path:
        """The finished page: the one ``ksweep report --html`` writes of the database."""
        return write_page(self.db, self.out)
