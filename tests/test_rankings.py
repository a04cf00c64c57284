"""Rankings you can trust: confirmation of the leaders (pure rules, then end to end with a
gcc program whose timings are noisy from a seeded distribution: a known winner, a known
tie, a config whose single lucky measurement would win), and the physics gate (a planted
cheat never ranks)."""

import csv
import json
import math
import shutil
import textwrap
from pathlib import Path

import pytest

from ksweep.cli.main import main
from ksweep.gpu import physics
from ksweep.gpu.peaks import peaks_for
from ksweep.verify.confirm import Confirmation, Interval, choose, interval, order, paired, speedup, verdicts
from ksweep.result import Result
from ksweep.spec.load import spec_from_dict
from ksweep.status import Status
from ksweep.store.sqlite import Store
from ksweep.errors import SpecError

PROGRAMS = Path(__file__).parent / "programs"


# -- the rules, as pure functions ---------------------------------------------------------

def test_interval_is_student_t_around_the_mean_with_the_median_reported():
    iv = interval([1.0, 1.1, 1.2])
    assert iv.median == 1.1 and iv.n == 3
    assert iv.hi - iv.lo == pytest.approx(2 * 4.303 * 0.1 / math.sqrt(3), rel=1e-3)
    assert interval([2.0]) == Interval(2.0, 2.0, 2.0, 1)


def test_verdicts_best_tie_and_a_flaky_config():
    v = verdicts({"a": [1.00, 1.01, 0.99], "b": [1.005, 1.0, 1.01], "c": [1.3, 1.31, 1.29], "d": [0.5, 0.5]},
                 {"d": 1}, "min")
    assert v["a"].mark == "BEST" and v["b"].mark == "TIE" and v["c"].mark == ""
    assert v["d"].mark == "" and v["d"].failed == 1  # faster, but one confirmation run failed: never BEST
    up = verdicts({"a": [10.0, 10.1], "b": [9.0, 9.1]}, {}, "max")
    assert up["a"].mark == "BEST"


def test_speedup_interval_is_conservative():
    s = speedup(Interval(1.0, 0.9, 1.1, 3), Interval(2.0, 1.8, 2.2, 3), "min")
    assert (s.median, s.lo, s.hi) == (2.0, pytest.approx(1.8 / 1.1), pytest.approx(2.2 / 0.9))


def test_rounds_pair_the_configs_so_a_drift_common_to_a_round_cancels():
    # the clock falls round by round (the power cap); in every round "d" is 5% behind "b"
    best, other = [1.0, 1.1, 1.2], [1.05, 1.155, 1.26]
    assert interval(best).overlaps(interval(other))  # apart, each config's runs cannot tell them apart
    unpaired = verdicts({"b": best, "d": other}, {}, "min")
    assert unpaired["d"].mark == "TIE"
    by_round = verdicts({"b": best, "d": other}, {}, "min", {"b": [0, 1, 2], "d": [0, 1, 2]})
    assert by_round["b"].mark == "BEST" and by_round["d"].mark == ""
    f = paired(dict(enumerate(best)), dict(enumerate(other)), "min")
    assert (f.median, f.lo, f.hi, f.n) == (pytest.approx(1.05), pytest.approx(1.05), pytest.approx(1.05), 3)
    # the order in which the values came does not matter, the round does
    shuffled = verdicts({"b": best, "d": other[::-1]}, {}, "min", {"b": [0, 1, 2], "d": [2, 1, 0]})
    assert shuffled["d"].mark == ""
    # a factor that changes sign from round to round is a TIE; so is "max" the other way round
    noisy = verdicts({"b": best, "d": [1.1, 1.05, 1.26]}, {}, "min", {"b": [0, 1, 2], "d": [0, 1, 2]})
    assert noisy["d"].mark == "TIE"
    up = paired({0: 10.0, 1: 11.0}, {0: 9.0, 1: 9.9}, "max")
    assert up.median == pytest.approx(10 / 9) and up.lo == pytest.approx(10 / 9)
    # fewer than two common rounds, or a value that is not positive: no pairing, the intervals decide
    assert paired({0: 1.0, 1: 1.1}, {1: 1.2, 2: 1.3}, "min") is None
    assert paired({0: 1.0, 1: 0.0}, {0: 1.2, 1: 1.3}, "min") is None
    few = verdicts({"b": best, "d": other}, {}, "min", {"b": [0, 1, 2], "d": [5, 6, 2]})
    assert few["d"].mark == "TIE"


def test_best_is_not_a_median_over_other_rounds_than_the_others():
    """A config measured in 20 rounds (the later ones on a slower board) against one measured
    in its first 5: the first is 3% faster in every round they share, so it is BEST, whatever
    their medians say; and with equal medians the order they come in does not decide."""
    many = [1.0] * 5 + [1.10] * 15
    few = [1.03] * 5
    v = verdicts({"few": few, "many": many}, {}, "min", {"few": list(range(5)), "many": list(range(20))})
    assert v["many"].mark == "BEST" and v["few"].mark == ""
    steady, worse = [1.0] * 20, [1.0] * 14 + [1.1] * 6  # the same median; "worse" slower in 6 rounds
    for order_ in (("steady", "worse"), ("worse", "steady")):
        data = {"steady": steady, "worse": worse}
        v = verdicts({k: data[k] for k in order_}, {}, "min", {k: list(range(20)) for k in order_})
        assert (v["steady"].mark, v["worse"].mark) == ("BEST", "")
    # "max" (a throughput): the same rule the other way round
    up = verdicts({"a": [10.0, 11.0, 12.0], "b": [9.5, 10.45, 11.4]}, {}, "max", {"a": [0, 1, 2], "b": [0, 1, 2]})
    assert (up["a"].mark, up["b"].mark) == ("BEST", "")
    # the factor is the geometric mean of the per-round factors, inside its own interval
    f = paired(dict(enumerate(steady)), dict(enumerate(worse)), "min")
    assert f.lo <= f.median <= f.hi and f.median == pytest.approx(1.1 ** (6 / 20))


def test_no_best_says_the_hardening_barred_the_configs_that_passed_their_runs():
    """Every confirmed config ran OK in each round, then the hardening found each UNSAFE: the
    line says that, not that no config passed its confirmation runs (which they all did)."""
    from ksweep.job import config_id
    from ksweep.verify.confirm import confirmed
    from ksweep.report.table import confirmation_line
    from ksweep.result import Measurement

    a, b = {"X": 1}, {"X": 2}
    results = [Result("v", "s", p, Status.UNSAFE, cache_key=k, metrics={"ms": 1.0}) for p, k in ((a, "ka"), (b, "kb"))]
    runs = [Measurement("v", "s", p, k, r, Status.OK, value=1.0 + r / 10) for r in range(3) for p, k in ((a, "ka"), (b, "kb"))]
    conf = confirmed(results, runs, "min", {("v", "s"): config_id(a)})[("v", "s")]
    line = confirmation_line(conf)
    assert conf.best is None
    assert "no config passed every confirmation run" not in line
    assert line.endswith("; the 2 that passed every confirmation run may not be BEST (UNSAFE): no BEST")
    # one flaky, the other UNSAFE: both reasons
    flaky = runs[:-1] + [Measurement("v", "s", b, "kb", 2, Status.CRASH)]
    results[1] = Result("v", "s", b, Status.OK, cache_key="kb", metrics={"ms": 1.0})
    line = confirmation_line(confirmed(results, flaky, "min")[("v", "s")])
    assert line.endswith("; the 1 that passed every confirmation run may not be BEST (UNSAFE): no BEST")
    alone = confirmed(results[1:], flaky[1::2], "min")[("v", "s")]
    assert confirmation_line(alone).endswith("; no config passed every confirmation run: no BEST")


def test_the_stored_confirmation_pairs_its_rounds():
    """confirm.confirmed: the BEST's speed-up over the default from the rounds both ran in,
    so a clock that falls from round to round does not hide a steady 5% lead."""
    from ksweep.job import config_id
    from ksweep.verify.confirm import confirmed
    from ksweep.report.table import confirmation_line
    from ksweep.result import Measurement

    default, tuned = {"X": 1}, {"X": 2}
    results = [Result("v", "s", p, Status.OK, cache_key=k, metrics={"ms": 1.0}) for p, k in ((default, "kd"), (tuned, "kt"))]
    tuned_runs = [Measurement("v", "s", tuned, "kt", r, Status.OK, value=t) for r, t in enumerate((1.0, 1.1, 1.2))]
    default_runs = [Measurement("v", "s", default, "kd", r, Status.OK, value=1.05 * t)
                    for r, t in enumerate((1.0, 1.1, 1.2))]
    interleaved = [m for pair in zip(tuned_runs, default_runs) for m in pair]  # round 0, round 1, round 2
    conf = confirmed(results, interleaved, "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert conf.best == config_id(tuned) and conf.verdicts[config_id(default)].mark == ""
    assert (conf.speedup.lo, conf.speedup.hi) == (pytest.approx(1.05), pytest.approx(1.05))
    assert "BEST is 1.05x the default (95% interval 1.05-1.05)" in confirmation_line(conf)
    assert confirmation_line(conf).startswith("  confirmed: 2 configs x 3 rounds")
    alone = confirmed(results, tuned_runs[:1], "min")[("v", "s")]
    assert confirmation_line(alone) == "  confirmed: 1 config x 1 round"  # not "1 configs x 1 rounds"
    # a confirmation cut short (Ctrl-C in round 2): the default has 2 runs, not the 3 the line said
    cut = confirmed(results, interleaved[:-1], "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert confirmation_line(cut).startswith("  confirmed: 2 configs x 2-3 rounds")
    assert "TIE" not in confirmation_line(conf)
    # the default confirmed by one sweep, the tuned config by a later one (the sweep extended):
    # their rounds 0, 1, 2 were not taken together, so they are not paired
    apart = confirmed(results, default_runs + tuned_runs, "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert apart.verdicts[config_id(default)].mark == "TIE"
    assert apart.speedup.lo < 1 < apart.speedup.hi and apart.rounds == 3
    # nor do the runs of one round number taken on another GPU model, or after a long pause
    from dataclasses import replace

    def at(times, models) -> list:  # the interleaved runs (tuned, default per round) at these times, on these GPUs
        return [replace(m, finished=t, gpu_name=g) for m, t, g in zip(interleaved, times, models)]

    steady = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    h100 = ["H100"] * 6
    conf = confirmed(results, at(steady, ["H100", "A100"] * 3), "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert conf.verdicts[config_id(default)].mark == "TIE"  # each round split across two models: no pair
    for models in (h100, ["H100", None] * 3):  # a run with no GPU (its build failed) breaks no round
        conf = confirmed(results, at(steady, models), "min", {("v", "s"): config_id(default)})[("v", "s")]
        assert conf.verdicts[config_id(default)].mark == ""  # seconds apart on one model: paired
    # round 0 cut short: the default's run of it came 500 s later (a resumed sweep, the board
    # cool again: faster); paired with the tuned run of round 0 it would hide the 5% lead
    late = interleaved[:1] + [replace(interleaved[1], value=0.9)] + interleaved[2:]
    runs = [replace(m, finished=t, gpu_name="H100") for m, t in zip(late, [0.0, 500.0, 502.0, 504.0, 506.0, 508.0])]
    conf = confirmed(results, runs, "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert conf.verdicts[config_id(default)].mark == "" and conf.speedup.n == 2
    together = [replace(m, finished=t, gpu_name="H100") for m, t in zip(late, steady)]
    assert confirmed(results, together, "min", {("v", "s"): config_id(default)})[("v", "s")].speedup.n == 3


def test_choose_and_interleaved_order():
    results = [Result("v", "s", {"X": x}, Status.OK, metrics={"ms": ms}) for x, ms in
               [(1, 3.0), (2, 1.0), (3, 2.0), (4, float("nan"))]]
    results.append(Result("v", "s", {"X": 5}, Status.CRASH))
    assert choose(results, "ms", "min", 2) == ['{"X":2}', '{"X":3}']  # NaN and a crash never lead
    assert choose(results, "ms", "max", 1) == ['{"X":1}']
    # the best, and the others within a margin of the second best (one lucky value cannot move it)
    more = results + [Result("v", "s", {"X": x}, Status.OK, metrics={"ms": ms}) for x, ms in [(6, 2.08), (7, 2.11)]]
    assert choose(more, "ms", "min", 5, within=0.05) == ['{"X":2}', '{"X":3}', '{"X":6}']  # 2.08 <= 2.1 < 2.11
    assert choose(more, "ms", "min", 5, within=0.5) == ['{"X":2}', '{"X":3}', '{"X":6}', '{"X":7}', '{"X":1}']
    assert choose(more, "ms", "max", 5, within=0.05) == ['{"X":1}', '{"X":7}', '{"X":6}']  # 2.08 >= 2.11 / 1.05
    assert choose(more, "ms", "min", 1, within=0.05) == ['{"X":2}']
    assert order(["a", "b", "c"], 0) == ["a", "b", "c"] and order(["a", "b", "c"], 1) == ["b", "c", "a"]


def test_confirm_option_is_checked():
    assert Confirmation.parse("5,3") == Confirmation(5, 3) == Confirmation(5, 3, 0.05)
    assert Confirmation.parse("5,3,2") == Confirmation(5, 3, 0.02)
    assert Confirmation.parse("4, 2, all") == Confirmation(4, 2, None)
    for bad in ("5", "0,3", "a,b", "5,3,x", "5,3,-1", "5,3,1,1", "5,3,nan", "5,1000000000", "1000000000,3"):
        with pytest.raises(ValueError):
            Confirmation.parse(bad)
    with pytest.raises(ValueError, match="from 0 to 100"):  # the library's too: it would run for ever
        Confirmation(5, 10**9)


# -- the physics gate -----------------------------------------------------------------------

def test_peaks_are_matched_by_the_drivers_gpu_name():
    assert peaks_for("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert peaks_for("NVIDIA H100 PCIe").name == "H100 PCIe"
    assert peaks_for("NVIDIA H200").bandwidth_gbs == 4800
    assert peaks_for("NVIDIA A100-SXM4-80GB").name == "A100 80GB SXM"
    assert peaks_for("NVIDIA B200").tflops["fp8"] == 4500
    assert peaks_for("NVIDIA GeForce RTX 4090").tflops["fp16"] == 330.3
    assert peaks_for("NVIDIA GeForce RTX 5090").bandwidth_gbs == 1792
    assert peaks_for("fake") is None and peaks_for(None) is None


def test_floor_takes_the_larger_of_compute_and_memory_time():
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    # an SGEMM 4096^3: 1.37e11 flop at 66.9 TFLOP/s fp32 = 2.05 ms; its 201 MB at 3.35 TB/s = 0.06 ms
    f = physics.floor(physics.Work(flops=2 * 4096 ** 3, bytes=3 * 4 * 4096 ** 2), "fp32", h100)
    assert f.seconds == pytest.approx(2 * 4096 ** 3 / 66.9e12) and "TFLOP/s (fp32, H100 SXM)" in f.what
    copy = physics.floor(physics.Work(bytes=8e9), "fp32", h100)
    assert copy.seconds == pytest.approx(8e9 / 3350e9) and "GB/s" in copy.what
    assert physics.check(2.1, "ms", f, 0.1) is None  # 98% of peak: possible
    too_fast = physics.check(0.07, "ms", f, 0.1)
    assert too_fast.startswith("0.07 ms is 29.") and "faster than the hardware allows" in too_fast
    assert physics.check(1.9, "ms", f, 0.1) is None  # within the margin
    assert physics.check(70.0, "us", f, 0.1) is not None  # the same cheat in microseconds


def test_physics_spec_keys_are_checked():
    with pytest.raises(SpecError, match="did you mean 'fp16'"):
        spec_from_dict({"params": {"X": [1]}, "physics": {"flops": "2", "dtype": "fp17"}})
    with pytest.raises(SpecError, match="shapes.s.flops"):
        spec_from_dict({"params": {"X": [1]}, "physics": {"dtype": "fp32"},
                        "shapes": {"s": {"defines": {"M": 2}, "flops": "2 * M * NOPE"}}})


# -- end to end -------------------------------------------------------------------------------

def _noisy(tmp_path: Path, extra: str = "", values: str = "[1, 2, 3, 4, 5, 6, 7, 8]") -> Path:
    shutil.copy(PROGRAMS / "noisy.c", tmp_path / "noisy.c")
    (tmp_path / "noise").mkdir()
    spec = tmp_path / "noisy.toml"
    spec.write_text(textwrap.dedent(f"""
        [params]
        X = {{ values = {values}, default = 1 }}
        [build]
        sources = ["noisy.c"]
        command = ["gcc", "-O0", "{{defines}}", "-o", "{{binary}}", "noisy.c"]
        [run]
        env = {{ NOISE_DIR = "{tmp_path / 'noise'}" }}
        [check]
        expected = {{ checksum = 1.0 }}
        {extra}
    """))
    return spec


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _status_of(out: str) -> dict[int, str]:
    """X -> the STATUS cell of the table."""
    marks = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0].isdigit() and len(cells) > 5:
            status = next((c for c in cells if c in ("BEST", "TIE", "ok", "IMPOSSIBLE")), None)
            marks[int(cells[0])] = status
    return marks


def test_a_lucky_single_measurement_does_not_win_after_confirmation(tmp_path, capsys):
    spec = _noisy(tmp_path)
    db = tmp_path / "n.db"
    code, out, err = _cli(capsys, "run", spec, "--db", db, "--strategy", "grid")
    assert code == 0, err
    marks = _status_of(out)
    assert {marks[3], marks[4]} == {"BEST", "TIE"}  # equally fast: the data cannot tell them apart
    assert marks[5] == "ok"  # 0.8 ms once, 1.3 ms on each confirmation run
    line = next(ln for ln in out.splitlines() if "confirmed:" in ln)
    assert "4 configs x 3 rounds" in line and "BEST is 2" in line and "the default" in line
    with Store(db) as store:
        ms = store.measurements()
        assert len(ms) == 12 and {m.round for m in ms} == {0, 1, 2}
        # the lucky one, the two within 5% of the second best, and the default (X=1); not X=2
        # (1.6 ms: 60% behind) nor the rest of the five best
        assert {m.params["X"] for m in ms} == {1, 3, 4, 5}
        first_round = [m.params["X"] for m in ms[:4]]
        second_round = [m.params["X"] for m in ms[4:8]]
        assert second_round == first_round[1:] + first_round[:1]  # interleaved: rotated each round
    # the budget counts confirmation runs separately, and a finished sweep resumes with none
    code, out, _ = _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", "-q")
    assert code == 0 and "0 evaluated, 8 resumed" in out
    with Store(db) as store:
        assert len(store.measurements()) == 12
    csv_rows = {int(r["X"]): r for r in csv.DictReader((tmp_path / "n.csv").open())}
    assert {csv_rows[3]["confirm_mark"], csv_rows[4]["confirm_mark"]} == {"BEST", "TIE"}
    assert csv_rows[5]["confirm_n"] == "3" and csv_rows[8]["confirm_n"] == ""
    code, out, _ = _cli(capsys, "report", db, "--format", "json")
    records = {r["params"]["X"]: r for r in json.loads(out)}
    assert records[1]["confirmation"]["default"] is True and records[1]["confirmation"]["n"] == 3


def test_the_librarys_default_sweep_is_ksweep_runs_and_picks_the_confirmed_winner(tmp_path):
    """ksweep.run_sweep(spec) with no options runs the sweep `ksweep run spec` runs: X=5,
    0.8 ms once and 1.3 ms after, is not the library's BEST (it was, under a grid with no
    confirmation), and the library's best is what explain and export ship."""
    import ksweep
    from ksweep.spec.load import load_spec
    from ksweep.sweep.driver import SweepOptions

    assert SweepOptions().strategy == "auto" and SweepOptions().confirm == Confirmation.parse("5,3,5")
    summary, db = ksweep.run_sweep(load_spec(_noisy(tmp_path)), db=tmp_path / "lib.db")
    assert summary.confirm_runs == 12
    assert ksweep.best_result(db).params["X"] in (3, 4)
    with Store(db, create=False) as store:
        assert {m.params["X"] for m in store.measurements()} == {1, 3, 4, 5}


def test_without_confirmation_the_lucky_config_wins(tmp_path, capsys):
    spec = _noisy(tmp_path)
    code, out, err = _cli(capsys, "run", spec, "--db", tmp_path / "n.db", "--strategy", "grid", "--no-confirm")
    assert code == 0, err
    assert _status_of(out)[5] == "BEST" and "confirmed:" not in out


def test_max_evals_does_not_count_confirmation_runs(tmp_path, capsys):
    spec = _noisy(tmp_path)
    code, out, err = _cli(capsys, "run", spec, "--db", tmp_path / "n.db", "--strategy", "grid", "--max-evals",
                          "4", "--confirm", "2,2", "-q")
    assert code == 0, err
    assert "4 evaluated" in out and "confirmation runs" in out
    with Store(tmp_path / "n.db") as store:
        assert len([r for r in store.results() if r.status is not Status.PRUNED]) == 4
        # the 2 best (X=3, X=4) and the default (X=1) x 2 rounds
        assert sorted({m.params["X"] for m in store.measurements()}) == [1, 3, 4]
        assert len(store.measurements()) == 6


def test_a_planted_cheat_is_impossible_and_never_best(tmp_path, capsys):
    physics_table = """
        [physics]
        flops = "2 * 10**9"
        dtype = "fp32"
        peak_tflops = 4.0
    """
    spec = _noisy(tmp_path, physics_table, values="[1, 3, 5, 6]")
    text = spec.read_text().replace('"-O0",', '"-O0", "-DCHEAT",')
    spec.write_text(text)
    for confirm in ([], ["--no-confirm"]):
        db = tmp_path / f"cheat{len(confirm)}.db"
        code, out, err = _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", *confirm)
        assert code == 0, err
        marks = _status_of(out)
        assert marks[6] == "IMPOSSIBLE" and marks[3] == "BEST"
        with Store(db) as store:
            (cheat,) = [r for r in store.results() if r.params["X"] == 6]
        assert cheat.status is Status.IMPOSSIBLE and "faster than the hardware allows" in cheat.message
        assert cheat.value("ms") is None


# -- the GPU's state per run (NVML behind an interface, faked) -------------------------------

def test_watch_sums_up_the_samples_of_a_run():
    from ksweep.run.gpu_state import FakeMonitor, GpuSample, summarize, watch

    samples = [GpuSample(1980, 2619, 60, 300.0, 0), GpuSample(1755, 2619, 83, 700.0, 0x4 | 0x40),
               GpuSample(1980, 2619, 70, 310.0, 0x1)]  # 0x1: idle, not throttling
    state = summarize(samples, {"cuda": "13.0", "driver": "580.1"})
    assert state["sm_clock_mhz"] == 1980 and state["sm_clock_min_mhz"] == 1755
    assert state["temperature_max_c"] == 83 and state["power_max_w"] == 700.0
    assert state["throttled"] and state["throttle_reasons"] == ["hw_thermal", "sw_power_cap"]
    assert state["cuda_version"] == "13.0" and state["driver_version"] == "580.1"
    assert not summarize([GpuSample(1980, reasons=0x1)])["throttled"] and summarize([]) == {}
    calm = FakeMonitor(lambda index, n: GpuSample(1980 - n, 2619, 50, 100.0, 0), {"cuda": "13.0"})
    with watch(calm, 0, period=0.001) as w:
        pass
    assert w.state["samples"] >= 2 and not w.state["throttled"] and w.state["cuda_version"] == "13.0"
    with watch(calm, None) as none:  # a slot without a GPU: nothing to watch
        pass
    assert none.state == {}


def test_a_run_measured_while_throttled_is_measured_again(tmp_path):
    from ksweep.sweep.driver import Sweep, SweepOptions
    from ksweep.testing import FakeExecutor, Planned

    (tmp_path / "toy.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "t.toml").write_text(textwrap.dedent("""
        [params]
        A = [1, 2, 3]
        [build]
        sources = ["toy.c"]
        command = ["true", "{defines}", "-o", "{binary}", "toy.c"]
    """))
    from ksweep.spec.load import load_spec

    spec = load_spec(tmp_path / "t.toml")
    calls: dict[int, int] = {}
    hot = {"throttled": True, "throttle_reasons": ["sw_thermal"], "sm_clock_mhz": 1400}
    cool = {"throttled": False, "throttle_reasons": [], "sm_clock_mhz": 1980}

    def answer(job):  # build, then runs: A=2's first run is throttled; A=3 is throttled every time
        a = job.params["A"]
        calls[a] = calls.get(a, 0) + 1
        throttled = a == 3 or (a == 2 and calls[a] == 2)
        return Planned(Status.OK, Status.OK, {"ms": 5.0 - a + (3 if throttled else 0)}, "",
                       hot if throttled else cool)

    with Store(tmp_path / "t.db") as store:
        summary = Sweep(spec, store, FakeExecutor(answer), SweepOptions(confirm=None, strategy="grid")).run()
        rows = {r.params["A"]: r for r in store.results()}
    assert calls == {1: 2, 2: 3, 3: 3}  # one build each; A=2 and A=3 ran twice
    assert rows[2].metrics["ms"] == 3.0 and not rows[2].gpu_state["throttled"]  # the calm second run
    assert rows[3].gpu_state["throttled"] and rows[3].metrics["ms"] == 5.0  # kept, flagged
    assert summary.throttled == 3 and summary.sm_clocks and "runs throttled" in summary.clocks
    from io import StringIO
    from rich.console import Console
    from ksweep.report.table import render

    buf = StringIO()
    render(list(rows.values()), "ms", "min", Console(file=buf, width=200))
    assert "measured while throttled: sw_thermal" in buf.getvalue()


def test_the_confirmation_builds_everything_before_its_first_run(tmp_path):
    """The rounds pair runs taken seconds apart: a build missing from the cache (here every
    confirmation build is asked anew) must not fall between two runs of one round."""
    from test_driver import toy

    from ksweep.sweep.driver import Sweep, SweepOptions
    from ksweep.testing import FakeExecutor

    events: list[tuple[str, str | None, int]] = []

    class Logged(FakeExecutor):
        def submit_build(self, job):
            events.append(("build", job.phase, job.params["A"]))
            return super().submit_build(job)

        def submit_run(self, job, build):
            events.append(("run", job.phase, job.params["A"]))
            return super().submit_run(job, build)

    spec = toy(tmp_path, a=(1, 2, 3, 4), b=(1,))
    with Store(tmp_path / "t.db") as store:
        Sweep(spec, store, Logged(lambda job: (Status.OK, Status.OK, {"ms": 10.0 - job.params["A"]})),
              SweepOptions(strategy="grid", confirm=Confirmation(3, 2, None))).run()
        assert len(store.measurements()) == 4 * 2  # the 3 best and the default, 2 rounds each
    confirm = [(kind, a) for kind, phase, a in events if phase == "confirm"]
    first_run = [kind for kind, _ in confirm].index("run")
    assert {a for _, a in confirm[:first_run]} == {1, 2, 3, 4}  # all four built before the first run
    assert [kind for kind, _ in confirm].count("run") == 8
    # and each build's result is taken by a run (an executor may hold a binary until one does)
    assert [kind for kind, _ in confirm].count("build") == 8


def test_a_default_config_that_failed_is_not_run_again_by_the_confirmation(tmp_path, capsys):
    """A default that hangs would cost the confirmation a timeout per round: a failed
    default is left out of it (there is no speed-up over it to measure)."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { if (X == 1) return 3; '
                                  'printf("@@RESULT ms=%d\\n", 10 + X); return 0; }\n')
    spec = tmp_path / "p.toml"
    spec.write_text(textwrap.dedent("""
        [params]
        X = { values = [1, 2, 3, 4], default = 1 }
        [build]
        sources = ["p.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "p.c"]
    """))
    db = tmp_path / "p.db"
    code, out, err = _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", "--confirm", "2,2")
    assert code == 0, err
    with Store(db) as store:
        assert sorted({m.params["X"] for m in store.measurements()}) == [2, 3]
    line = next(ln for ln in out.splitlines() if "confirmed:" in ln)
    assert "2 configs x 2 rounds" in line and "the default" not in line


def test_the_best_of_an_earlier_confirmation_is_measured_again_with_the_new_leaders(tmp_path, capsys):
    """First X in [1, 2]: X=2 (40 ms) is BEST. Then X in [1, 2, 3, 4]: X=3 and X=4 (20, 20.5)
    lead and X=2 is no longer among the k. It and the default are measured again in the
    new rounds, so BEST's lead and its speed-up come from runs taken together."""
    (tmp_path / "p.c").write_text('#include <stdio.h>\nint main(void) { const double ms[] = {0, 50, 40, 20, 20.5}; '
                                  'printf("@@RESULT ms=%g\\n", ms[X]); return 0; }\n')
    spec = tmp_path / "p.toml"
    text = textwrap.dedent("""
        [params]
        X = { values = VALUES, default = 1 }
        [build]
        sources = ["p.c"]
        command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "p.c"]
    """)
    spec.write_text(text.replace("VALUES", "[1, 2]"))
    db = tmp_path / "p.db"
    assert _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", "--confirm", "3,2")[0] == 0
    with Store(db) as store:
        first = {(m.params["X"], m.round): m.finished for m in store.measurements()}
    assert sorted(first) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    spec.write_text(text.replace("VALUES", "[1, 2, 3, 4]"))
    code, out, err = _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", "--confirm", "3,2")
    assert code == 0, err
    with Store(db) as store:
        now = {(m.params["X"], m.round): m.finished for m in store.measurements()}
    assert sorted(now) == [(x, r) for x in (1, 2, 3, 4) for r in (0, 1)]
    assert all(now[k] > first[k] for k in first)  # taken again, with X=3 and X=4
    line = next(ln for ln in out.splitlines() if "confirmed:" in ln)
    assert "4 configs x 2 rounds" in line and "BEST is 2.5x the default" in line, line
    # run again: nothing new to confirm, nothing measured again
    assert _cli(capsys, "run", spec, "--db", db, "--strategy", "grid", "--confirm", "3,2")[0] == 0
    with Store(db) as store:
        assert {(m.params["X"], m.round): m.finished for m in store.measurements()} == now


def test_one_confirmation_round_claims_no_interval_and_no_lead():
    """``--confirm K,1`` (or a confirmation stopped after its first round): one run per config
    showed ±0.00% and "95% interval 1.06-1.06", and a config 1% behind BEST was never a TIE,
    whatever the noise."""
    from ksweep.verify.confirm import confirmed
    from ksweep.job import config_id
    from ksweep.report.history import _spread, Point
    from ksweep.report.table import _confirm_cells, confirmation_line
    from ksweep.result import Measurement

    default, tuned = {"X": 1}, {"X": 2}
    results = [Result("v", "s", p, Status.OK, cache_key=k, metrics={"ms": 1.0}) for p, k in ((default, "kd"), (tuned, "kt"))]
    runs = [Measurement("v", "s", tuned, "kt", 0, Status.OK, value=1.0),
            Measurement("v", "s", default, "kd", 0, Status.OK, value=1.06)]
    conf = confirmed(results, runs, "min", {("v", "s"): config_id(default)})[("v", "s")]
    assert conf.best == config_id(tuned) and conf.verdicts[config_id(default)].mark == "TIE"
    line = confirmation_line(conf)
    assert "one round: no interval" in line and "1.06-1.06" not in line
    assert _confirm_cells(conf.verdicts[config_id(tuned)])[1] == "-"
    best = conf.verdicts[conf.best]
    assert _spread(Point("r", None, 1.0, tuned, best.interval, 2, confirmed=True)) == "n=1"
