"""The live progress of a sweep says no more than happened: never past its total, and no
'done' line for a sweep that was interrupted."""

import io

from ksweep.report.progress import PlainLog
from ksweep.result import Result
from ksweep.status import Status
from ksweep.sweep.options import Summary


def ok(a):
    return Result("base", "s", {"A": a}, Status.OK, metrics={"ms": float(a)})


def test_the_count_never_passes_the_total():
    out = io.StringIO()
    log = PlainLog("ms", out)
    log.target_started("base", "s", 40, 40, 2)  # two planned, and the reference config beside them
    for a in range(3):
        log.result(ok(a), None)
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines[1:]] == ["1/2", "2/2", "3/3"]


def test_an_interrupted_sweep_prints_no_done_line():
    out = io.StringIO()
    log = PlainLog("ms", out)
    log.finished(Summary(evaluated=3, interrupted=True))
    assert "done" not in out.getvalue()
    log.finished(Summary(evaluated=3))
    assert out.getvalue().startswith("[ksweep] done: 3 evaluated")
