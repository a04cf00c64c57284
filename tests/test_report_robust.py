"""Reports of awkward databases: NaN and infinite metrics stored by older versions, many
failures under --top, markup-like messages, a closed pipe (issue 12, items 7 and 11); the
plan-only megakernel example (item 12)."""

import csv
import io
import json
import math
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import ksweep
from ksweep.cli.main import main
from ksweep.report.records import to_json
from ksweep.report.plot import heatmap_grid
from ksweep.store.ranking import ranked_best as best, rank
from ksweep.result import Result
from ksweep.space.plan import make_plan
from ksweep.status import Status
from ksweep.store.sqlite import Store

NAN, INF = float("nan"), float("inf")


def strict_json(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity, as strict parsers do."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def make_db(path, results, objective=("ms", "min")):
    with Store(path) as store:
        store.set_meta("objective", {"metric": objective[0], "direction": objective[1]})
        store.put_many(results)
    return str(path)


def ok(a, b, **metrics):
    return Result("v", "s", {"A": a, "B": b}, Status.OK, metrics=metrics)


@pytest.fixture
def old_db(tmp_path):
    """Rows as an older ksweep stored them: OK with NaN or infinite metrics, and failures."""
    return make_db(tmp_path / "old.db", [
        ok(1, 1, ms=NAN, gflops=INF),
        ok(1, 2, ms=2.0, gflops=-INF),
        ok(2, 1, ms=INF),
        ok(2, 2, ms=-INF),
        ok(4, 1, ms=1.5, gflops=NAN, checksum=NAN),
        Result("v", "s", {"A": 4, "B": 2}, Status.NO_RESULT, "NaN in ms", metrics={"ms": NAN}),
        Result("v", "s", {"A": 8, "B": 1}, Status.CHECKSUM_MISMATCH, "checksum=inf", metrics={"ms": 0.5, "checksum": INF}),
        Result("v", "s", {"A": 8, "B": 2}, Status.PRUNED, "A * B <= 8"),
    ])


def report(capsys, *argv):
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    return out


def test_table_of_nan_and_inf_rows(old_db, capsys):
    out = report(capsys, old_db)
    lines = out.splitlines()
    assert "2 ok, 3 failed or pruned, 3 unranked" in lines[0]
    best_line = next(ln for ln in lines if "BEST" in ln)
    assert best_line.split()[:2] == ["4", "1"]  # ms=1.5, the least finite value
    for text in ("nan", "inf", "-inf"):
        assert text in out
    # STATUS, then the message in its own NOTE column
    cells = [ln.split() for ln in lines]
    assert ["OK", "ms=nan", "is", "not", "a", "finite", "number:", "not", "ranked"] in [c[-9:] for c in cells]
    assert ["OK", "ms=-inf", "is", "not", "a", "finite", "number:", "not", "ranked"] in [c[-9:] for c in cells]
    assert ["NO_RESULT", "NaN", "in", "ms"] in [c[-4:] for c in cells]
    assert ["CHECKSUM_MISMATCH", "checksum=inf"] in [c[-2:] for c in cells]


def test_a_parameter_the_spec_no_longer_has_keeps_its_column(tmp_path, capsys):
    """B taken out of the spec: the table's columns were the spec's (A alone), so the results
    swept with B (superseded, shown by --superseded) read as one config twice, A=2 at 1 ms and 2 ms."""
    path = tmp_path / "p.db"
    with Store(path) as store:
        store.set_meta("objective", {"metric": "ms", "direction": "min"})
        store.put_many([ok(2, 1, ms=1.0), ok(2, 2, ms=2.0)])
        store.put(Result("v", "s", {"A": 3}, Status.OK, metrics={"ms": 3.0}))
        store.set_meta("params:v:s", ["A"])  # as the sweep without B kept it
    lines = report(capsys, str(path)).splitlines()
    assert lines[1].split()[:2] == ["A", "B"]
    assert [ln.split()[:3] for ln in lines[2:5]] == [["2", "1", "-"], ["2", "2", "-"], ["3", "-", "-"]]


def test_json_of_nan_and_inf_rows_is_strict_json(old_db, capsys):
    records = strict_json(report(capsys, old_db, "--format", "json"))
    metrics = {(r["params"]["A"], r["params"]["B"]): r["metrics"] for r in records}
    assert metrics[(1, 1)] == {"ms": None, "gflops": None}
    assert metrics[(1, 2)] == {"ms": 2.0, "gflops": None}
    assert metrics[(8, 1)] == {"ms": 0.5, "checksum": None}
    assert strict_json(to_json([ok(1, 1, ms=NAN)]))[0]["metrics"] == {"ms": None}


def test_csv_of_nan_and_inf_rows(old_db, capsys):
    rows = list(csv.DictReader(io.StringIO(report(capsys, old_db, "--format", "csv"))))
    by = {(r["A"], r["B"]): r for r in rows}
    assert len(rows) == 8
    assert math.isnan(float(by[("1", "1")]["metric.ms"])) and float(by[("1", "1")]["metric.gflops"]) == INF
    assert float(by[("2", "2")]["metric.ms"]) == -INF and by[("8", "2")]["metric.ms"] == ""


@pytest.mark.parametrize("direction, expected", [("min", (4, 1)), ("max", (1, 2))])
def test_rank_and_best_skip_values_that_are_not_finite(old_db, direction, expected):
    with Store(old_db, create=False) as store:
        results = store.results()
    ranked = rank(results, "ms", direction)
    assert (ranked[0].params["A"], ranked[0].params["B"]) == expected
    assert [r.status for r in ranked[2:5]] == [Status.OK] * 3  # unranked OK rows, before the failures
    assert ranked[-1].status is Status.PRUNED
    chosen = best(results, "ms", direction)
    assert (chosen.params["A"], chosen.params["B"]) == expected
    assert best([ok(1, 1, ms=NAN), ok(1, 2, ms=INF)], "ms", "max") is None
    assert best([ok(1, 1, gflops=INF), ok(1, 2, gflops=3.0)], "gflops", "max").params["B"] == 2


def test_heatmap_skips_values_that_are_not_finite(old_db):
    with Store(old_db, create=False) as store:
        results = store.results()
    xs, ys, cells = heatmap_grid(results, "A", "B", "ms", "min")
    assert xs == [1, 2, 4, 8] and ys == [1, 2]
    assert cells == {(1, 2): 2.0, (4, 1): 1.5}
    _, _, cells = heatmap_grid(results, "A", "B", "gflops", "max")
    assert cells == {}


def test_heatmap_plot_of_nan_and_inf_rows(old_db, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", old_db, "--x", "A", "--y", "B", "--out", str(out)]) == 0
    assert out.stat().st_size > 0
    assert "Traceback" not in capsys.readouterr().err


def test_markup_like_text_is_printed_as_it_is(tmp_path, capsys):
    db = make_db(tmp_path / "m.db", [
        Result("v", "s", {"A": "[bold]", "B": 1}, Status.OK, metrics={"ms": 1.0}),
        Result("v", "s", {"A": "x", "B": 2}, Status.RUN_ERROR, "exit code 1: [/red] unbalanced [x]"),
    ])
    out = report(capsys, db)
    assert "[bold]" in out and "RUN_ERROR  exit code 1: [/red] unbalanced [x]" in out


@pytest.fixture
def many_db(tmp_path):
    rows = [Result("v", "s", {"A": i}, Status.OK, metrics={"ms": 100.0 - i}) for i in range(30)]
    rows += [Result("v", "s", {"A": 100 + i}, Status.RUN_ERROR, f"exit code {i}") for i in range(25)]
    rows += [Result("v", "s", {"A": 200 + i}, Status.PRUNED, "A < 200") for i in range(5)]
    return make_db(tmp_path / "many.db", rows)


def _statuses(out):
    rows = [ln.split() for ln in out.splitlines()[2:] if ln.strip() and not ln.startswith("  …")]
    return [r[5] for r in rows]


def test_top_limits_failed_rows_too(many_db, capsys):
    out = report(capsys, many_db, "--top", "3")
    assert _statuses(out) == ["BEST", "ok", "ok", "RUN_ERROR", "RUN_ERROR", "RUN_ERROR"]
    assert "  … and 27 more ok, 27 more failed or pruned (ksweep report --top 0 / --all)" in out.splitlines()
    out = report(capsys, many_db, "--top", "40")
    assert len(_statuses(out)) == 30 + 30 and "…" not in out


@pytest.mark.parametrize("argv", [[], ["--top", "0"], ["--all"], ["--top", "3", "--all"]])
def test_every_row_without_a_limit(many_db, capsys, argv):
    out = report(capsys, many_db, *argv)
    assert len(_statuses(out)) == 60 and "…" not in out


@pytest.mark.parametrize("command", [["report"], ["history"], ["plot", "convergence"]])
def test_a_shape_or_variant_the_database_lacks_is_one_line_not_an_empty_report(old_db, capsys, command):
    """`report --variant bse` printed nothing and exited 0 (`history` too: 'no evaluated
    result yet'); now one line names the ones there are."""
    assert main([*command, old_db, "--variant", "vv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--variant vv: no such variant" in err[0] and "did you mean v?" in err[0]
    assert main([*command, old_db, "--shape", "n1024"]) == 2
    err = capsys.readouterr().err
    assert "--shape n1024: no such shape" in err and "(shapes: s)" in err
    assert main(["report", old_db, "--shape", "s", "--variant", "v"]) == 0


def test_a_phased_search_has_a_table_per_phase_and_its_default_row_in_the_first(tmp_path):
    """The reference (defaults) config has no phase: it made a third table of its own, and
    the confirmation's line was printed under every table."""
    from io import StringIO

    from rich.console import Console

    from ksweep.job import config_id
    from ksweep.verify.confirm import confirmed
    from ksweep.report.table import render
    from ksweep.result import Measurement

    def row(a, ms, phase):
        return Result("v", "s", {"A": a, "B": 1}, Status.OK, metrics={"ms": ms}, phase=phase, cache_key=f"k{a}")

    rows = [row(0, 4.0, "reference"), row(1, 3.0, "tier1"), row(2, 2.5, "tier1"), row(3, 2.0, "tier2")]
    runs = [Measurement("v", "s", r.params, r.cache_key, i, Status.OK, value=r.metrics["ms"] * (1 + i / 100))
            for i in range(3) for r in (rows[0], rows[3])]
    conf = confirmed(rows, runs, "min", {("v", "s"): config_id(rows[0].params)})
    buf = StringIO()
    render(rows, "ms", "min", Console(file=buf, width=200), confirmations=conf)
    out = buf.getvalue()
    tables = [line for line in out.splitlines() if line.startswith("variant v")]
    assert len(tables) == 2 and "phase tier1" in tables[0] and "phase tier2" in tables[1]
    first = out[:out.index(tables[1])]
    assert any(line.split()[:2] == ["0", "1"] for line in first.splitlines())  # the default's row, with tier1's
    assert out.count("confirmed: 2 configs x 3 rounds") == 1 and out.index("confirmed:") > out.index(tables[1])
    # no BEST (every confirmed config failed a run): the line still comes once
    flaky = [Measurement(m.variant, m.shape, m.params, m.result_key, m.round, Status.CRASH) for m in runs]
    buf = StringIO()
    render(rows, "ms", "min", Console(file=buf, width=200), confirmations=confirmed(rows, flaky, "min"))
    assert buf.getvalue().count("no BEST") == 1
    # a title is one line however narrow the page (a table's own title wrapped mid-phrase)
    buf = StringIO()
    render(rows, "ms", "min", Console(file=buf, width=40))
    assert "variant v · shape s · phase tier1 — 3 ok, 0 failed or pruned" in buf.getvalue().splitlines()


def test_a_misspelt_option_is_one_line_from_its_command_with_the_option_meant(many_db, capsys):
    """It was 'ksweep: error: ksweep: unrecognized arguments: --max-evls 30 (see ksweep --help)'."""
    with pytest.raises(SystemExit) as exc:
        main(["report", many_db, "--tpo", "3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and err == [
        "ksweep: error: report: unrecognized arguments: --tpo 3 — did you mean --top? (see ksweep report --help)"]
    with pytest.raises(SystemExit):
        main(["report", many_db, "--csv"])  # no option near it: said without a guess
    assert capsys.readouterr().err.startswith("ksweep: error: report: unrecognized arguments: --csv (see")
    with pytest.raises(SystemExit):
        main(["--bogus", "report", many_db])  # before the command: the top level's
    assert capsys.readouterr().err == "ksweep: error: unrecognized arguments: --bogus (see ksweep --help)\n"
    with pytest.raises(SystemExit):
        main(["report", many_db, "--version"])  # far from any of report's options: no guess
    assert "did you mean" not in capsys.readouterr().err


def test_negative_top_is_a_usage_error(many_db, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["report", many_db, "--top", "-1"])
    assert exc.value.code == 2 and "--top" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"ksweep {version('ksweep')}"


def test_a_command_imports_only_its_own_module(tmp_path):
    """`ksweep plan ...` (and `bench-strategies`, its module named with _) builds only its
    own sub-command: the other commands' imports cost every call start-up time."""
    code = ("import sys\nfrom ksweep.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('ksweep.cli.') and m != 'ksweep.cli.main'))")
    spec = tmp_path / "s.toml"
    spec.write_text("[params]\nX = [1, 2]\n[build]\ncommand = ['true']\n[run]\ncommand = ['true']\n")
    out = subprocess.run([sys.executable, "-c", code, "plan", str(spec)], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "['ksweep.cli.plan']"
    out = subprocess.run([sys.executable, "-c", code, "bench-strategies", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert "usage: ksweep bench-strategies" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "['ksweep.cli.bench_strategies']"


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_closed_pipe_is_no_traceback(tmp_path, fmt):
    rows = [Result("v", "s", {"A": i, "B": "x" * 40}, Status.OK if i % 3 else Status.RUN_ERROR, "exit code 1",
                   metrics={"ms": 1.0 + i}) for i in range(4000)]
    db = make_db(tmp_path / "big.db", rows)
    cmd = f"'{sys.executable}' -m ksweep report '{db}' --format {fmt} | head -1"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


MEGAKERNEL = Path(__file__).parent.parent / "examples" / "megakernel" / "megakernel.toml"


def test_megakernel_is_plan_only_and_says_so(tmp_path):
    header = MEGAKERNEL.read_text().split("\n[sweep]")[0]
    assert "PLAN ONLY" in header and "`ksweep run megakernel.toml` does not" in header
    plan = make_plan(ksweep.load_spec(MEGAKERNEL))
    counts = re.search(r"In all, .*: ([0-9,]+) configs, ([0-9,]+) valid, ([0-9,]+) pruned", header).groups()
    total, valid, pruned = (int(n.replace(",", "")) for n in counts)
    assert (plan.total, plan.valid, sum(plan.pruned.values())) == (total, valid, pruned)
    assert "3,456 raw, 2,208" in header and "10,368 raw, 6,624 valid" in header
    by = {(e.shape, e.variant): e for e in plan.entries}
    assert (by[("fc1", "cta1")].total, by[("fc1", "cta1")].valid) == (3456, 2208)
    assert by[("fc1", "cta1")].pruned["smem"] == 384 and by[("fc1", "cta1")].pruned["split_cols_per_thread"] == 864
    assert (by[("fc2", "cta2")].total, by[("fc2", "cta2")].valid) == (10368, 6624)

    # no source: `ksweep run` stops with one line and exit 2 (on a copy: nothing is left in examples/)
    spec = tmp_path / "megakernel.toml"
    shutil.copy(MEGAKERNEL, spec)
    proc = subprocess.run([sys.executable, "-m", "ksweep", "run", str(spec), "-q"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ksweep: error:") and "Traceback" not in proc.stderr
    # a host without a GPU may be told so first; elsewhere the missing source is the error
    assert "source 'megakernel.cu' does not exist" in lines[0] or "no NVIDIA GPU" in lines[0]


def test_plotting_leaves_the_callers_matplotlib_backend_alone(tmp_path):
    """The plot functions switched matplotlib to Agg, which turns a notebook's inline plots
    off: they draw on a Figure of their own and save it, with no pyplot."""
    import subprocess
    import sys

    code = ("import matplotlib; matplotlib.use('svg'); from pathlib import Path; from ksweep.report.plot import plot_heatmap; "
            "from ksweep.result import Result; from ksweep.status import Status; "
            "rs = [Result('v', 's', {'A': a, 'B': b}, Status.OK, metrics={'ms': float(a + b)}) "
            "for a in (1, 2) for b in (1, 2)]; "
            f"plot_heatmap(rs, 'A', 'B', 'ms', 'min', Path({str(tmp_path / 'h.png')!r})); "
            "print(matplotlib.get_backend())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "svg" and (tmp_path / "h.png").read_bytes()[:4] == b"\x89PNG"


def test_a_database_with_no_result_yet_says_so(tmp_path, capsys):
    """A sweep stopped before its first result (`--time-limit 0`): report printed nothing at all."""
    db = make_db(tmp_path / "empty.db", [])
    assert "empty.db: no evaluated result yet" in report(capsys, db)
    assert main(["history", db, "--plot", str(tmp_path / "t.png")]) == 0
    assert "no evaluated result yet: no plot written" in capsys.readouterr().out
    assert not (tmp_path / "t.png").exists()
