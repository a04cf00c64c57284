"""``ksweep report --html``'s page (pure): one self-contained HTML file.

Everything it shows is in the file: the text of each section (context, insights, the
leaders' facts) as HTML, the tables' and charts' data as JSON, the page's own script and
style (``assets/``) and the charting library's script (plotly.js, which the optional
``plotly`` package ships; ``app/html.py`` reads it). The library and the data are inlined
gzip-compressed and base64-encoded, and the page's script inflates them in the browser
(``DecompressionStream``), so that a sweep of 20,000 configs is a page of a few MB.

A Content-Security-Policy forbids every request but to the page's own inlined parts
(``blob:`` for the inflated library, ``data:`` for the heat-maps' images): opening the page
never reaches a network, and a violation is recorded in the page (``data-violations``).
A page written while a sweep runs (``live``) says how far it is and reloads itself.

Nothing in the page depends on when it was written: the page of a finished sweep is the
same file whichever command wrote it (``ksweep run --html`` at the end, ``ksweep report
--html`` later).
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import Sequence

from .records import finite_or_none

CSP = ("default-src 'none'; script-src 'unsafe-inline' blob:; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'")
REFRESH_SECONDS = 5  # a live page reloads itself this often


@dataclass(frozen=True)
class Library:
    """The charting library the page inlines."""

    name: str  # "plotly.js"
    version: str
    notice: str  # its own header (copyright and licence), kept in the page as written
    package: str  # the Python package it came from, with its version
    payload: str  # its script, gzip-compressed and base64-encoded


@dataclass(frozen=True)
class Leader:
    """What explain says of one of the leading configs."""

    mark: str  # BEST, TIE, or its rank
    config: str
    value: str  # its value as it compares (a confirmed median, else its measurement)
    kernels: tuple[tuple[str, ...], ...] = ()  # (kernel, registers, spills, static smem, occupancy, limited by)
    explain: str | None = None  # ksweep explain's whole text
    profile: tuple[str, ...] = ()  # the stored Nsight Compute profile's headline
    note: str | None = None


@dataclass
class Section:
    """One shape × variant."""

    variant: str
    shape: str
    tables: list[dict]  # html_model.table_data
    heat: dict | None = None
    best: dict | None = None
    convergence: dict | None = None
    pareto: list[dict] = field(default_factory=list)
    history: dict | None = None
    insights: list[str] | None = None  # ksweep insights' lines, None when not computed
    insights_note: str | None = None
    leaders: list[Leader] = field(default_factory=list)
    leaders_note: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Page:
    title: str
    source: str  # the database
    objective: dict  # {"metric", "direction"}
    objectives: list[dict]
    sections: list[Section]
    context: list[tuple[str, str]]  # (what, text)
    spec_text: str | None = None
    spec_note: str | None = None
    notes: list[str] = field(default_factory=list)
    banner: str | None = None  # no result yet, no config succeeded
    live: list[str] | None = None  # the progress lines of a sweep still running


# every request the policy refuses is written on the page (<html data-violations>), before anything else runs
_WATCH = ("document.addEventListener('securitypolicyviolation', function (e) { var r = document.documentElement; "
          "r.dataset.violations = (r.dataset.violations ? r.dataset.violations + ' ' : '') + e.violatedDirective + '=' "
          "+ e.blockedURI; });")


def pack(data: bytes) -> str:
    """gzip (no time stamp: the same bytes give the same page) and base64."""
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _data(page: Page) -> dict:
    return {
        "objective": page.objective, "objectives": page.objectives, "live": page.live is not None,
        "sections": [{"id": f"s{i}", "variant": s.variant, "shape": s.shape, "tables": s.tables, "heat": s.heat,
                      "best": s.best, "convergence": s.convergence, "pareto": s.pareto, "history": s.history}
                     for i, s in enumerate(page.sections)],
    }


def render_page(page: Page, library: Library) -> str:
    """The whole page as text."""
    data = json.dumps(finite_or_none(_data(page)), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    head = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *([f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'] if page.live is not None else []),
        f"<title>{escape(page.title)}</title>",
        f"<script>{_WATCH}</script>",
        f"<style>\n{_asset('page.css')}</style>",
        "</head>",
    ]
    body = ['<body data-ready="0">', "<header>", f"<h1>{escape(page.title)}</h1>",
            f'<p class="source">{escape(page.source)}</p>']
    if page.live is not None:
        body.append('<div class="live" id="live"><strong>sweep running</strong> (this page reloads itself every '
                    f"{REFRESH_SECONDS} s)<br>" + "<br>".join(escape(x) for x in page.live) + "</div>")
    if page.banner:
        body.append(f'<p class="banner" id="banner">{escape(page.banner)}</p>')
    body += [f'<p class="note">note: {escape(n)}</p>' for n in page.notes]
    body.append('<noscript><p class="banner">The tables and charts need JavaScript; the text sections below '
                "do not.</p></noscript>")
    if page.sections:
        body.append('<nav><ul>' + "".join(
            f'<li><a href="#s{i}">{escape(_name(s))}</a></li>' for i, s in enumerate(page.sections))
            + '<li><a href="#context">context</a></li></ul></nav>')
    body.append("</header>")
    body.append("<main>")
    for i, s in enumerate(page.sections):
        body += _section(f"s{i}", s, page.live is not None)
    body += _context(page, library)
    body.append("</main>")
    notice = library.notice.replace("--", "- -")
    body += [
        f"<!-- {escape(library.name)} {escape(library.version)}, inlined from the Python package "
        f"{escape(library.package)}; its own notice:\n{notice}\n-->",
        f'<script type="application/gzip-base64" id="ksweep-library">{library.payload}</script>',
        f'<script type="application/gzip-base64" id="ksweep-data">{pack(data.encode("utf-8"))}</script>',
        f"<script>\n{_asset('page.js')}</script>",
        "</body>", "</html>", "",
    ]
    return "\n".join(head + body)


def _name(s: Section) -> str:
    return f"{s.shape} / {s.variant}"


def _section(sid: str, s: Section, live: bool) -> list[str]:
    out = [f'<section class="target" id="{sid}">', f"<h2>shape {escape(s.shape)} · variant {escape(s.variant)}</h2>"]
    out += [f'<p class="note">note: {escape(n)}</p>' for n in s.notes]
    for j, t in enumerate(s.tables):
        out.append(f'<h3 class="table-title">{escape(t["title"])}</h3>')
        if t.get("confirmation"):
            out.append(f'<p class="confirmation">{escape(t["confirmation"].strip())}</p>')
        out.append(f'<div class="results" id="{sid}-t{j}" data-table="{j}"></div>')
    out.append('<div class="charts">')
    out.append(f'<div class="chart-box"><h3>heat-map</h3><div class="chart" id="{sid}-heat" '
               f'data-chart="heatmap"></div></div>')
    out.append(f'<div class="chart-box"><h3>convergence</h3><div class="chart" id="{sid}-conv" '
               f'data-chart="convergence"></div></div>')
    for k, _ in enumerate(s.pareto):
        out.append(f'<div class="chart-box"><h3>Pareto front</h3><div class="chart" id="{sid}-pareto{k}" '
                   f'data-chart="pareto" data-index="{k}"></div></div>')
    if s.history is not None:
        out.append(f'<div class="chart-box"><h3>history</h3><div class="chart" id="{sid}-history" '
                   f'data-chart="history"></div></div>')
    out.append("</div>")
    out += _leaders(s, live)
    out += _insights(s, live)
    out.append("</section>")
    return out


def _leaders(s: Section, live: bool) -> list[str]:
    out = ['<div class="leaders"><h3>the leaders</h3>']
    if live:
        out.append('<p class="muted">explain\'s facts of the leaders: when the sweep ends</p></div>')
        return out
    if s.leaders_note:
        out.append(f'<p class="muted">{escape(s.leaders_note)}</p>')
    for leader in s.leaders:
        out.append(f'<div class="leader"><p><span class="mark">{escape(leader.mark)}</span> '
                   f"{escape(leader.config)} <span class=\"muted\">{escape(leader.value)}</span></p>")
        if leader.kernels:
            out.append('<table class="facts"><thead><tr><th>kernel</th><th>registers</th><th>spilled bytes</th>'
                       "<th>static smem</th><th>occupancy</th><th>limited by</th></tr></thead><tbody>")
            out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in leader.kernels]
            out.append("</tbody></table>")
        if leader.note:
            out.append(f'<p class="muted">{escape(leader.note)}</p>')
        if leader.profile:
            out.append("<p>profile (Nsight Compute):</p><pre>" + escape("\n".join(leader.profile)) + "</pre>")
        if leader.explain:
            out.append(f"<details><summary>ksweep explain</summary><pre>{escape(leader.explain)}</pre></details>")
        out.append("</div>")
    out.append("</div>")
    return out


def _insights(s: Section, live: bool) -> list[str]:
    out = ['<div class="insights"><h3>insights</h3>']
    if live:
        out.append('<p class="muted">ksweep insights: when the sweep ends</p>')
    elif s.insights:
        out.append(f"<pre>{escape(chr(10).join(s.insights))}</pre>")
    else:
        out.append(f'<p class="muted">{escape(s.insights_note or "none")}</p>')
    out.append("</div>")
    return out


def _context(page: Page, library: Library) -> list[str]:
    out = ['<section id="context"><h2>context</h2><table class="context"><tbody>']
    rows: Sequence[tuple[str, str]] = [*page.context,
                                       ("charts", f"{library.name} {library.version} ({library.package}), inlined")]
    out += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows]
    out.append("</tbody></table>")
    if page.spec_text is not None:
        out.append(f'<details open><summary>the spec, as written{escape(page.spec_note or "")}</summary>'
                   f'<pre class="spec">{escape(page.spec_text)}</pre></details>')
    elif page.spec_note:
        out.append(f'<p class="muted">{escape(page.spec_note)}</p>')
    out.append("</section>")
    return out
