"""ksweep plot: a heat-map never mixes shapes in a cell, and a metric's direction (which
value is best) is the sweep's, a throughput's, or --direction's, and the figure says which."""

import pytest

from ksweep.cli.main import main
from ksweep.report.plot import heatmap_panels
from ksweep.result import Result
from ksweep.status import Status
from ksweep.store.sqlite import Store


def make_db(path, results, objective=("ms", "min")):
    with Store(path) as store:
        store.set_meta("objective", {"metric": objective[0], "direction": objective[1]})
        store.put_many(results)
    return str(path)


def ok(shape, a, b, **metrics):
    return Result("base", shape, {"A": a, "B": b}, Status.OK, metrics=metrics)


@pytest.fixture
def shapes_db(tmp_path):
    """Two shapes: 'small' is fast everywhere, 'big' slow; ms and gflops both stored."""
    rows = []
    for shape, scale in (("small", 1.0), ("big", 100.0)):
        for a in (1, 2):
            for b in (1, 2):
                for c in (1, 2):  # a third parameter the heat-map takes the best over
                    ms = scale * (a + b + c)
                    r = ok(shape, a, b, ms=ms, gflops=1000.0 / ms)
                    rows.append(Result(r.variant, r.shape, {**r.params, "C": c}, r.status, metrics=r.metrics))
    return make_db(tmp_path / "shapes.db", rows)


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures the plot commands save."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    saved = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


def panels(fig):
    """(title, {cell text}) of each heat-map panel, and the colour bars' labels."""
    maps = [ax for ax in fig.axes if ax.get_visible() and ax.images]
    bars = [ax.get_ylabel() for ax in fig.axes if ax.get_visible() and not ax.images]
    return [(ax.get_title(), sorted(t.get_text() for t in ax.texts)) for ax in maps], bars


def test_heatmap_panels_keep_shapes_apart(shapes_db):
    with Store(shapes_db, create=False) as store:
        results = store.results()
    grids = heatmap_panels(results, "A", "B", "ms", "min")
    assert set(grids) == {("base", "small"), ("base", "big")}
    assert grids[("base", "small")][2] == {(1, 1): 3.0, (1, 2): 4.0, (2, 1): 4.0, (2, 2): 5.0}
    assert grids[("base", "big")][2] == {(1, 1): 300.0, (1, 2): 400.0, (2, 1): 400.0, (2, 2): 500.0}


def test_heatmap_of_several_shapes_draws_a_panel_per_shape(shapes_db, tmp_path, figures, capsys):
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", shapes_db, "--x", "A", "--y", "B", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    drawn, bars = panels(figures[-1])
    # each panel's BEST (the store's: measured once here, no confirmation) is marked
    assert sorted(drawn) == [("big", ["300", "400", "400", "500", "BEST 300"]),
                             ("small", ["3", "4", "4", "5", "BEST 3"])]
    assert bars == ["best ms (min: lower is better)"] * 2
    # --shape: that shape's panel alone, named
    assert main(["plot", "heatmap", shapes_db, "--x", "A", "--y", "B", "--shape", "big", "--out", str(out),
                 "--force"]) == 0
    drawn, _ = panels(figures[-1])
    assert len(drawn) == 1 and drawn[0][1] == ["300", "400", "400", "500", "BEST 300"]
    assert drawn[0][0].endswith(": big")


def test_heatmap_of_a_throughput_shows_its_highest_value(shapes_db, tmp_path, figures):
    out = tmp_path / "h.png"
    argv = ["plot", "heatmap", shapes_db, "--x", "A", "--y", "B", "--shape", "small", "--metric", "gflops",
            "--out", str(out)]
    assert main(argv) == 0
    drawn, bars = panels(figures[-1])
    # the best gflops of (A, B) = (1, 1) is C = 1's 1000/3, not C = 2's 250
    assert drawn[0][1] == sorted(["333", "250", "250", "200"])
    assert bars == ["best gflops (max: higher is better)"]
    assert main([*argv, "--direction", "min", "--force"]) == 0  # the user's word wins
    drawn, bars = panels(figures[-1])
    assert drawn[0][1] == sorted(["250", "200", "200", "167"])
    assert bars == ["best gflops (min: lower is better)"]


def test_heatmap_direction_of_another_metric_is_min_unless_given(tmp_path, figures):
    db = make_db(tmp_path / "g.db", [ok("s", a, 1, gflops=float(a), regs_used=float(10 * a)) for a in (1, 2)],
                 objective=("gflops", "max"))
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", db, "--x", "A", "--y", "B", "--metric", "regs_used", "--out", str(out)]) == 0
    assert panels(figures[-1])[1] == ["best regs_used (min: lower is better)"]
    assert main(["plot", "heatmap", db, "--x", "A", "--y", "B", "--metric", "regs_used", "--direction", "max",
                 "--out", str(out), "--force"]) == 0
    assert panels(figures[-1])[1] == ["best regs_used (max: higher is better)"]


def test_convergence_of_a_throughput_follows_its_highest_value(shapes_db, tmp_path, figures):
    out = tmp_path / "c.png"
    assert main(["plot", "convergence", shapes_db, "--shape", "small", "--metric", "gflops", "--out", str(out)]) == 0
    ax = figures[-1].axes[0]
    assert ax.get_ylabel() == "best so far: gflops (max: higher is better)"
    ys = list(ax.lines[0].get_ydata())
    assert ys[-1] == pytest.approx(1000.0 / 3) and ys == sorted(ys)


def test_a_heatmap_of_one_parameter_against_itself_is_refused_in_one_line(shapes_db, tmp_path, capsys):
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", shapes_db, "--x", "A", "--y", "A", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--x and --y are both A: give two parameters" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_the_heatmap_marks_the_stores_best_with_its_confirmed_median(tmp_path, figures):
    """The cells show the best single measurement; the store's BEST is a confirmed median
    that may sit elsewhere (here A=2 B=2, measured once at 5.0 but confirmed at 4.1, while
    A=1 B=1 was once 4.0 and confirmed at 4.6): that cell is the one marked, with the value
    the table shows."""
    from ksweep.result import Measurement

    rows = [Result("base", "s", {"A": a, "B": b}, Status.OK, metrics={"ms": ms}, cache_key=f"k{a}{b}",
                   finished=10.0) for (a, b), ms in {(1, 1): 4.0, (1, 2): 6.0, (2, 1): 7.0, (2, 2): 5.0}.items()]
    db = make_db(tmp_path / "c.db", rows)
    with Store(db) as store:
        for r, values in ((rows[0], [4.6, 4.7, 4.6]), (rows[3], [4.1, 4.0, 4.1])):
            for i, v in enumerate(values):
                store.put_measurement(Measurement("base", "s", dict(r.params), r.cache_key, i, Status.OK, v,
                                                  finished=20.0 + i))
    out = tmp_path / "h.png"
    assert main(["plot", "heatmap", db, "--x", "A", "--y", "B", "--out", str(out)]) == 0
    (ax,) = [a for a in figures[-1].axes if a.images]
    marks = [t for t in ax.texts if t.get_text().startswith("BEST")]
    assert [t.get_text() for t in marks] == ["BEST 4.1 (median)"]
    x, y = marks[0].get_position()
    assert round(x) == 1 and round(y) == 1  # the cell of A=2, B=2 (x index 1, y index 1)
    assert len(ax.patches) == 1


def test_a_two_row_heatmaps_colour_bar_label_is_not_cut(tmp_path, figures):
    """A heat-map of two rows is short: its colour bar's label (a long vertical text) must
    still fit inside the figure."""
    rows = [ok("s", a, b, gflops_per_watt=float(a + b)) for a in (1, 2, 3, 4) for b in (1, 2)]
    db = make_db(tmp_path / "two.db", rows, objective=("gflops_per_watt", "max"))
    assert main(["plot", "heatmap", db, "--x", "A", "--y", "B", "--out", str(tmp_path / "two.png")]) == 0
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figures[-1]
    renderer = FigureCanvasAgg(fig).get_renderer()
    bar = next(ax for ax in fig.axes if not ax.images)
    box = bar.yaxis.label.get_window_extent(renderer)
    assert box.y0 >= 0 and box.y1 <= fig.bbox.height
