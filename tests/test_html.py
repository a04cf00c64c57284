"""``ksweep report --html`` and ``ksweep run --html`` (issue 39): one self-contained page per
database, its rows and BEST as the terminal table's, its charts drawn in a real browser
without any network, a live page that ends as the report's, and its bad inputs."""

from __future__ import annotations

import base64
import gzip
import json
import re
import textwrap
from pathlib import Path

import pytest

from conftest import ksweep_cli
from ksweep.app.html import LivePage, html_output, library
from ksweep.observer import NullObserver
from ksweep.report.table import fmt_cell
from ksweep.status import Status
from ksweep.store import standings
from ksweep.store.sqlite import Store
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.testing import FakeExecutor
from ksweep.testing.browser import Browser, find_chromium
from ksweep.verify.confirm import Confirmation

SPEC = """
[sweep]
name = "toy"
objectives = ["ms", "watts"]
[params]
A = [1, 2, 3, 4]
B = [1, 2, 3]
[[constraints]]
name = "small"
expr = "A * B != 12"
reason = "A * B is {A} * {B}"
[build]
sources = ["toy.c"]
command = ["true", "{defines}", "-o", "{binary}", "toy.c"]
[run]
command = ["{binary}"]
"""
SLOWER = {"factor": 1.0}  # the second revision's time: a regression


def answer(job):
    a, b = job.params["A"], job.params["B"]
    if (a, b) == (1, 3):
        return Status.COMPILE_ERROR, None, {}
    if (a, b) == (3, 3):
        return Status.OK, Status.RUN_ERROR, {}
    ms = SLOWER["factor"] * (10.0 + (a - 2) ** 2 + b)
    return Status.OK, Status.OK, {"ms": ms, "watts": 300.0 - 20 * (a - 2) ** 2 - 5 * b, "checksum": 1.0}


def sweep(folder: Path, db: Path) -> None:
    from ksweep.spec.load import load_spec

    with Store(db) as store:
        Sweep(load_spec(folder / "toy.toml"), store, FakeExecutor(answer),
              SweepOptions(strategy="grid", confirm=Confirmation(3, 3, None))).run()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A toy sweep of two objectives, confirmed, on two source revisions (the second slower),
    with a pruned config, a compile error and a run error."""
    folder = tmp_path_factory.mktemp("html")
    (folder / "toy.toml").write_text(textwrap.dedent(SPEC))
    (folder / "toy.c").write_text("int main(void) { return 0; }\n")
    db = folder / "toy.db"
    SLOWER["factor"] = 1.0
    sweep(folder, db)
    (folder / "toy.c").write_text("int main(void) { return 1; }\n")  # another revision
    SLOWER["factor"] = 1.5
    sweep(folder, db)
    page = folder / "toy.html"
    r = ksweep_cli("report", db, "--html", page)
    assert r.returncode == 0 and r.stdout.strip() == str(page), r.stderr
    return folder, db, page


def data_of(page: Path) -> dict:
    """The page's data, as its script inflates it."""
    packed = re.search(r'<script type="application/gzip-base64" id="ksweep-data">([^<]*)</script>',
                       page.read_text()).group(1)
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def test_the_page_holds_every_row_with_best_and_tie_as_the_store_says(swept):
    folder, db, page = swept
    with Store(db, create=False) as store:
        found = standings.read(store)
    (key, standing), = found.items()
    best = standing.best()
    data = data_of(page)
    section, = data["sections"]
    table, = section["tables"]
    assert len(table["status"]) == len(standing.results) == 12
    assert table["status"][0] == "BEST"
    assert [table["cols"][j][0] for j in range(table["params"])] == [fmt_cell(v) for v in best.params.values()]
    assert table["status"].count("BEST") == 1
    assert table["status"].count("PRUNED") == 1 and table["status"].count("COMPILE_ERROR") == 1
    assert "A * B is 4 * 3" in table["notes"][table["note"][table["status"].index("PRUNED")]]
    assert table["headers"][-5:] == ["MEDIAN", "CI95", "N", "STATUS", "NOTE"]
    ties = [c for c, v in standing.confirmation.verdicts.items() if v.mark == "TIE"]
    assert table["status"].count("TIE") == len(ties)
    assert "BEST is" in table["confirmation"]  # the speed-up over the default
    assert section["best"]["labels"] == {"A": "2", "B": "1"} and section["best"]["confirmed"]
    assert len(section["heat"]["values"]) == 9 and section["heat"]["varying"] == ["A", "B"]
    assert section["pareto"] and section["history"]["regression"] == [False, True]
    text = page.read_text()
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\'' in text
    assert "refresh" not in text  # a finished sweep's page stays still
    assert "read when this page was written" not in text  # the spec's text as the sweep kept it
    for shown in ("the spec, as written", "objectives = [&quot;ms&quot;, &quot;watts&quot;]", "source revision",
                  "the history holds 2 revisions", "knob importance", "ksweep explain"):
        assert shown in text, shown


def test_the_terminal_table_marks_the_same_best(swept, capsys):
    folder, db, page = swept
    r = ksweep_cli("report", db)
    best_line = next(line.split() for line in r.stdout.splitlines() if "BEST" in line.split())
    section, = data_of(page)["sections"]
    assert best_line[:2] == [section["tables"][0]["cols"][0][0], section["tables"][0]["cols"][1][0]]


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; .ci/run installs it where apt works)")
    with Browser() as b:
        yield b


def test_the_page_draws_every_chart_in_a_browser_without_any_network(swept, browser):
    folder, db, page = swept
    opened = browser.open(page.as_uri(), ready="window.ksweepReady")
    assert "error" not in opened.value, opened.value
    charts = {c["kind"]: c["drawn"] for c in opened.value["charts"]}
    assert charts == {"heatmap": "1", "convergence": "1", "pareto": "1", "history": "1"}
    dom = opened.dom
    assert opened.network == [] and "data-violations" not in dom and opened.console == []
    assert re.search(r'<body[^>]*data-ready="1"', dom)
    rows = re.findall(r'<tr data-row="(\d+)" data-status="([^"]+)"[^>]*>(.*?)</tr>', dom)
    assert len(rows) == 12 and rows[0][1] == "BEST"
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", rows[0][2])
    assert cells[:2] == ["2", "1"] and "BEST" in cells
    # what each chart drew, as the SVG in the DOM holds it
    heat = dom[dom.index('id="s0-heat"'):dom.index('id="s0-conv"')]
    assert 'class="hm"' in heat and "BEST" in heat  # the heat-map's image, the store's BEST marked
    conv = dom[dom.index('id="s0-conv"'):dom.index('id="s0-pareto0"')]
    assert re.search(r'class="js-line"[^>]* d="M', conv)
    pareto = dom[dom.index('id="s0-pareto0"'):dom.index('id="s0-history"')]
    assert len(re.findall(r'class="point"', pareto)) == 9  # every valid config: the front and the others
    assert "regression" in dom[dom.index('id="s0-history"'):]


def test_the_table_filters_by_status_and_sorts(swept, browser):
    folder, db, page = swept
    browser.open(page.as_uri(), ready="window.ksweepReady")
    rows = "document.querySelectorAll('#s0-t0 tbody tr')"
    assert browser.evaluate(f"{rows}.length") == 12
    browser.evaluate("(() => { const b = document.querySelector('#s0-t0 input[data-status=PRUNED]'); b.click(); })()")
    assert browser.evaluate(f"{rows}.length") == 11
    assert browser.evaluate(f"[...{rows}].every(r => r.dataset.status !== 'PRUNED')")
    header = "[...document.querySelectorAll('#s0-t0 th')].find(th => th.textContent === 'WATTS')"
    column = browser.evaluate(f"Number({header}.dataset.col)")
    browser.evaluate(f"{header}.click()")
    watts = browser.evaluate(f"[...{rows}].map(r => r.children[{column}].textContent)")
    numbers = [float(w) for w in watts if w != "-"]
    assert numbers == sorted(numbers) and watts[-1] == "-"  # no value last
    browser.evaluate(f"{header}.click()")
    again = [float(w) for w in browser.evaluate(f"[...{rows}].map(r => r.children[{column}].textContent)")
             if w != "-"]
    assert again == sorted(numbers, reverse=True)


def test_the_reader_picks_the_heat_map_s_knobs(swept, browser):
    folder, db, page = swept
    browser.open(page.as_uri(), ready="window.ksweepReady")
    titles = ("[...document.querySelectorAll('#s0-heat .xtitle, #s0-heat .ytitle')].map(t => t.textContent)")
    assert browser.evaluate(titles) == ["A", "B"]
    cells = "document.querySelector('#s0-heat .hm image').getAttribute('href')"
    before = browser.evaluate(cells)
    browser.evaluate("(() => { const x = document.querySelectorAll('#s0-heat select')[0]; x.value = 'B'; "
                     "x.dispatchEvent(new Event('change')); })()")
    redrawn = (f"new Promise(done => {{ const t0 = Date.now(); const poll = () => {{ const v = {titles}; "
               f"if (v.join() === 'B,A' || Date.now() - t0 > 30000) done(v); else setTimeout(poll, 20); }}; poll(); }})")
    assert browser.evaluate(redrawn) == ["B", "A"]  # x took B, and y the other knob (Plotly.react redraws in a frame)
    assert browser.evaluate(cells) != before  # the grid drawn again, transposed


def test_a_failed_only_database_and_an_empty_one_say_so(tmp_path, browser):
    from ksweep.result import Result

    failed = tmp_path / "failed.db"
    with Store(failed) as store:
        store.put_many([Result("v", "s", {"A": a}, Status.RUN_ERROR, f"exit code {a}") for a in range(3)])
    empty = tmp_path / "empty.db"
    Store(empty).close()
    for db, says in ((failed, "no config succeeded: 3 RUN_ERROR"), (empty, "no evaluated result yet")):
        page = tmp_path / f"{db.stem}.html"
        r = ksweep_cli("report", db, "--html", page)
        assert r.returncode == 0, r.stderr
        assert says in page.read_text()
        opened = browser.open(page.as_uri(), ready="window.ksweepReady")
        assert "error" not in opened.value and opened.network == []
        if db == failed:
            assert all(c["drawn"] == "empty" for c in opened.value["charts"])
            assert len(re.findall(r'<tr data-row="\d+" data-status="RUN_ERROR"', opened.dom)) == 3
            assert "exit code 2" in opened.dom
            assert "no config succeeded: no heat-map" in opened.dom


def test_a_live_page_shows_progress_and_ends_as_the_report(swept, tmp_path):
    folder, db, report_page = swept
    seen: list[str] = []

    class Watch(NullObserver):  # the page as it stands when each result arrives
        def result(self, result, best, resumed=False):
            seen.append(out.path.read_text())

    live_db = tmp_path / "live.db"
    out = html_output(tmp_path / "live.html", live_db)
    from ksweep.spec.load import load_spec

    live = LivePage(Watch(), live_db, out, metric="ms", every=0.0, share=1e9)
    SLOWER["factor"] = 1.0
    with Store(live_db) as store:
        Sweep(load_spec(folder / "toy.toml"), store, FakeExecutor(answer),
              SweepOptions(strategy="grid", confirm=None), observer=live).run()
    assert len(seen) == 11  # every config but the pruned one
    for k, text in enumerate(seen):
        assert '<meta http-equiv="refresh"' in text and f"{k} of 11 evaluated" in text
    assert "best so far: ms=" in seen[-1] and "ETA " in seen[-1]
    live.final()
    r = ksweep_cli("report", live_db, "--html", tmp_path / "report.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "live.html").read_bytes() == (tmp_path / "report.html").read_bytes()


def test_run_html_writes_the_report_s_page_and_refuses_an_existing_one(program_dir):
    spec = program_dir("""
        [params]
        X = [1, 2]
        [build]
        sources = ["behaviours.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
    """)
    folder = program_dir.dir
    (folder / "old.html").write_text("an older page")
    r = ksweep_cli("run", spec, "--no-confirm", "-q", "--html", folder / "old.html", cwd=folder)
    assert r.returncode == 2 and "--html" in r.stderr and "give --force" in r.stderr
    assert not (folder / ".ksweep" / "sweep.db").exists()  # refused before any work
    r = ksweep_cli("run", spec, "--no-confirm", "-q", "--html", folder / "page.html", cwd=folder)
    assert r.returncode == 0, r.stderr
    assert f"page: {folder / 'page.html'}" in r.stdout
    ksweep_cli("report", folder / ".ksweep" / "sweep.db", "--html", folder / "report.html")
    assert (folder / "page.html").read_bytes() == (folder / "report.html").read_bytes()


def test_without_plotly_html_is_one_line_with_the_install_command(swept, monkeypatch):
    folder, db, _ = swept
    library.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "plotly", None)
    try:
        r = ksweep_cli("report", db, "--html", folder / "none.html")
    finally:
        library.cache_clear()
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "pip install 'ksweep[html]'" in r.stderr and not (folder / "none.html").exists()


def test_the_convergence_line_is_its_steps():
    """The best so far as the evaluations where it changed and the last one: the same line
    (drawn as steps) in a few points where a sweep has thousands."""
    from ksweep.report.html_model import convergence_data
    from ksweep.result import Result

    rows = [Result("v", "s", {"A": i}, Status.OK if m else Status.RUN_ERROR, metrics={"ms": m} if m else {})
            for i, m in enumerate([None, 5.0, 6.0, 4.0, 4.0, 7.0, 3.0, 9.0])]
    assert convergence_data(rows, "ms", "min", "v", "s") == {"x": [1, 2, 4, 7, 8], "y": [None, 5.0, 4.0, 3.0, 3.0],
                                                             "n": 8}


def test_the_leaders_facts_are_explain_s(tmp_path):
    """A build's ptxas resources and the spec's launch: the occupancy and its binding limit
    (256 threads of 128 registers on sm_90: 2 blocks, 25%, limited by registers), as
    ``ksweep explain`` computes them, under the three best; the whole explain text too."""
    from test_driver import toy

    from ksweep.result import Result
    from ksweep.spec.model import Objective

    spec = toy(tmp_path, a=(1, 2, 3), b=(1,), sweep='arch = "sm_90"', extra='[profile]\nthreads = "256"\n')
    kernels = ({"name": "_Z4tunePf", "registers": 128, "spill_stores": 0, "spill_loads": 0, "smem": 0,
                "judged": True},)
    db = tmp_path / "toy.db"
    with Store(db) as store:
        store.set_objectives([Objective("ms", "min")])
        store.set_meta("spec", str(spec.path))
        store.set_meta("spec_name", "toy")
        store.put_many([Result("base", "default", {"A": a, "B": 1}, Status.OK, metrics={"ms": 10.0 + a},
                               regs=128, spills=0, smem=0, kernels=kernels) for a in (1, 2, 3)])
        store.put_profile("base", "default", {"A": 1, "B": 1}, None, "default", [{"kernel": "tune", "metrics": {
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 87.5, "unit": "%"}}}], tool="ncu")
    r = ksweep_cli("report", db, "--html", tmp_path / "p.html")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "p.html").read_text()
    leaders = text[text.index("<h3>the leaders</h3>"):text.index("<h3>insights</h3>")]
    assert leaders.count('class="leader"') == 3 and '<span class="mark">BEST</span> A=1 B=1' in leaders
    assert leaders.count("<td>tune</td><td>128</td><td>0</td><td>0</td><td>25% (2 blocks/SM)</td>"
                         "<td>registers</td>") == 3
    assert "theoretical occupancy (256 threads/block" in leaders  # explain's own text, under "ksweep explain"
    best = leaders[:leaders.index('class="leader"', leaders.index('class="leader"') + 1)]
    assert "profile (Nsight Compute):" in best and "SM throughput  87.5%" in best  # its stored profile
