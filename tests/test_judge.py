"""Where a run's status is decided (pure): kernel mode's worker answers, a persistent host's
answer, and the judgement of an OK run's metrics against the spec's check; and the
``verified`` column that judgement fills."""

import sqlite3

import pytest

from ksweep.result import Result
from ksweep.run.classify import classify, classify_answer, lost, not_run
from ksweep.run.handle import Answer
from ksweep.run.persistent import host_outcome
from ksweep.spec.model import Check
from ksweep.status import STOPPED, Status, Stopped
from ksweep.store.sqlite import SCHEMA_VERSION, Store
from ksweep.verify.checks import judge

TIMES = {"ms": 0.5, "ms_p20": 0.4, "ms_p80": 0.6, "reps": 9.0}


# -- kernel mode: the worker's answer ------------------------------------------------------

@pytest.mark.parametrize("answer, status, fragment", [
    (Answer("timeout"), Status.HANG, "no answer within 2 s: worker killed and restarted"),
    (Answer("dead", returncode=-11, detail="segfault in the driver"), Status.CRASH,
     "the worker died (killed by SIGSEGV): segfault in the driver"),
    (Answer("dead", returncode=3, detail=""), Status.CRASH, "the worker died (exit code 3)"),
    (Answer("no_start", detail="the worker's setup failed: ValueError: bad sizes"), Status.RUN_ERROR,
     "the worker's setup failed: ValueError: bad sizes"),
    (Answer("reply", {"ok": False, "error": "CUDA_ERROR_ILLEGAL_ADDRESS in sync",
                      "cuda_error": "CUDA_ERROR_ILLEGAL_ADDRESS", "fatal": True}), Status.CUDA_ERROR,
     "CUDA_ERROR_ILLEGAL_ADDRESS in sync (context poisoned: worker restarted)"),
    (Answer("reply", {"ok": False, "error": "CUDA_ERROR_FILE_NOT_FOUND in load",
                      "cuda_error": "CUDA_ERROR_FILE_NOT_FOUND", "fatal": False}), Status.CUDA_ERROR,
     "CUDA_ERROR_FILE_NOT_FOUND in load"),
    (Answer("reply", {"ok": False, "error": "KeyError: 'grid'"}), Status.RUN_ERROR, "KeyError: 'grid'"),
    (Answer("reply", {"ok": True, "outputs": "mismatched", "metrics": {},
                      "mismatch": "output 0: max abs error 0.5 (element 3: got 1.5, expected 1)"}),
     Status.CHECKSUM_MISMATCH, "output 0: max abs error 0.5"),
])
def test_a_worker_answer_that_is_no_result(answer, status, fragment):
    got, message, metrics, checked = classify_answer(answer, timeout=2)
    assert (got, metrics, checked) == (status, {}, False)
    assert message.startswith(fragment)
    if "FILE_NOT_FOUND" in fragment:
        assert "poisoned" not in message  # only a fatal error restarts the worker


@pytest.mark.parametrize("outputs, checked", [("matched", True), ("captured", True), ("unchecked", False)])
def test_a_timed_kernel_is_ok_and_says_whether_its_outputs_were_checked(outputs, checked):
    answer = Answer("reply", {"ok": True, "outputs": outputs, "metrics": TIMES})
    assert classify_answer(answer, timeout=2) == (Status.OK, "", TIMES, checked)


def test_runs_that_could_not_be_attempted_or_were_lost():
    assert not_run("the harness did not build: x") == (Status.RUN_ERROR, "the harness did not build: x", {})
    assert lost("killed 3 workers") == (Status.CRASH, "killed 3 workers", {})


def test_stopped_is_no_status():
    assert isinstance(STOPPED, Stopped) and STOPPED == Stopped()
    assert not hasattr(STOPPED, "status")


# -- program mode on a persistent host: its answer as a process's outcome -------------------

class Captured:
    def __init__(self, text="", truncated=False):
        self._text, self.truncated = text, truncated

    def text(self):
        return self._text


def hosted(answer, stdout="", stderr="", elapsed=1.5):
    outcome, broken = host_outcome(answer, elapsed, Captured(stdout), Captured(stderr))
    return classify(outcome, timeout=5, context_error=broken), outcome


def test_a_host_answer_is_judged_as_a_process():
    (status, message, metrics), outcome = hosted(Answer("reply", {"ok": True, "rc": 0, "seconds": 0.25}),
                                                 stdout="@@RESULT ms=1")
    assert (status, message, metrics, outcome.seconds) == (Status.OK, "", {"ms": 1.0}, 0.25)
    (status, message, _), _ = hosted(Answer("reply", {"ok": True, "rc": 3, "seconds": 0.1}), stderr="bad N")
    assert status is Status.RUN_ERROR and message == "exit code 3: bad N"
    (status, message, _), _ = hosted(Answer("reply", {"ok": True, "rc": 3, "seconds": 0.1}))
    assert message == "exit code 3 (no output)"  # not 'exit code 3: '
    (status, message, _), outcome = hosted(Answer("timeout"))
    assert (status, outcome.seconds) == (Status.HANG, 1.5) and "no exit after 5 s" in message
    (status, message, _), _ = hosted(Answer("dead", returncode=-6), stderr="abort")
    assert status is Status.CRASH and "SIGABRT" in message
    (status, message, _), _ = hosted(Answer("dead", returncode=2), stdout="@@RESULT ms=1")  # exit(2) in main
    assert status is Status.RUN_ERROR and message.startswith("exit code 2")
    (status, message, _), outcome = hosted(Answer("no_start", detail="the worker did not start: no python"))
    assert status is Status.RUN_ERROR
    assert message == "the persistent host did not start: the worker did not start: no python"


def test_a_context_broken_after_the_program_ended_is_a_cuda_error():
    broken = {"ok": True, "rc": 0, "seconds": 0.1, "fatal": True, "message": "cudaErrorIllegalAddress after the run"}
    (status, message, metrics), _ = hosted(Answer("reply", broken), stdout="@@RESULT ms=1")
    assert (status, message, metrics) == (Status.CUDA_ERROR, "cudaErrorIllegalAddress after the run", {"ms": 1.0})
    (status, message, _), _ = hosted(Answer("reply", {**broken, "rc": 4}), stderr="oops")
    assert status is Status.RUN_ERROR and message == "exit code 4: oops; cudaErrorIllegalAddress after the run"
    # a message without "fatal" is not a broken context
    (status, _, _), _ = hosted(Answer("reply", {**broken, "fatal": False}), stdout="@@RESULT ms=1")
    assert status is Status.OK


# -- an OK run's metrics against the check ----------------------------------------------

EXPECTED = Check(keys=("checksum",), expected={"checksum": 100.0}, rtol=1e-3)
DEFAULTS = Check(keys=("checksum",), reference="defaults", rtol=1e-3)
BOUND = Check(max_keys={"rel_err": 1e-3})


@pytest.mark.parametrize("metrics, check, reference, is_reference, want", [
    # no check: OK, but nothing was verified
    ({"ms": 1.0}, Check(), None, False, (Status.OK, "", False)),
    ({"ms": 1.0, "checksum": 100.05}, EXPECTED, None, False, (Status.OK, "", True)),
    ({"ms": 1.0, "checksum": 3.0}, DEFAULTS, {"checksum": 3.001}, False, (Status.OK, "", True)),
    ({"ms": 1.0, "rel_err": 1e-4}, BOUND, None, False, (Status.OK, "", True)),
    # the reference config itself is what the others are checked against
    ({"ms": 1.0, "checksum": 3.0}, DEFAULTS, None, True, (Status.OK, "", True)),
    # the reference failed: OK, and the message says why it is not verified
    ({"ms": 1.0, "checksum": 3.0}, DEFAULTS, None, False,
     (Status.OK, "unverified: the reference (defaults) config failed", False)),
])
def test_judge_ok(metrics, check, reference, is_reference, want):
    assert judge(metrics, "ms", check, reference, is_reference) == want


def test_judge_failures():
    status, message, verified = judge({"checksum": 1.0}, "ms", Check(), None, False)
    assert (status, verified) == (Status.NO_RESULT, False)
    assert message == "objective 'ms' missing from @@RESULT (checksum)"
    assert judge({}, "tflops", Check(), None, False)[1] == "objective 'tflops' missing from @@RESULT (no keys)"
    status, message, verified = judge({"ms": 1.0, "checksum": 101.0}, "ms", EXPECTED, None, False)
    assert (status, verified) == (Status.CHECKSUM_MISMATCH, False) and "expected 100" in message
    status, message, _ = judge({"ms": 1.0, "checksum": 4.0}, "ms", DEFAULTS, {"checksum": 3.0}, False)
    assert status is Status.CHECKSUM_MISMATCH and "expected 3" in message
    # the reference config is checked against the expected values, never against itself
    assert judge({"ms": 1.0, "checksum": 7.0}, "ms", DEFAULTS, {"checksum": 3.0}, True) == (Status.OK, "", True)
    assert judge({"ms": 1.0, "rel_err": float("nan")}, "ms", BOUND, None, False)[0] is Status.CHECKSUM_MISMATCH


def test_outputs_checked_by_the_run_are_verified_without_a_check():
    assert judge({"ms": 1.0}, "ms", Check(), None, False, outputs_checked=True) == (Status.OK, "", True)
    assert judge({"ms": 1.0}, "ms", Check(), None, False, outputs_checked=False) == (Status.OK, "", False)
    assert judge({"us": 1.0}, "ms", Check(), None, False, outputs_checked=True)[::2] == (Status.NO_RESULT, False)


# -- the verified column --------------------------------------------------------------------

def test_verified_is_stored_and_read_back(tmp_path):
    with Store(tmp_path / "r.db") as store:
        store.put(Result("v", "s", {"A": 1}, Status.OK, verified=True, metrics={"ms": 1.0}))
        store.put(Result("v", "s", {"A": 2}, Status.OK, "unverified: the reference (defaults) config failed",
                         metrics={"ms": 2.0}))
        got = {r.params["A"]: (r.verified, r.message) for r in store.results()}
    assert got == {1: (True, ""), 2: (False, "unverified: the reference (defaults) config failed")}


@pytest.mark.parametrize("old", ["1", "2", "3", "4", "5"])
def test_an_older_database_gains_the_verified_column(tmp_path, old):
    path = tmp_path / "old.db"
    with Store(path) as store:
        store.put(Result("v", "s", {"A": 1}, Status.OK, metrics={"ms": 1.0}))
    db = sqlite3.connect(str(path))  # as an older ksweep wrote it: no gpu_state, measurements (nor verified)
    db.execute("DROP TABLE history")
    db.execute("ALTER TABLE results DROP COLUMN revision")
    db.execute("ALTER TABLE results DROP COLUMN code")
    db.execute("ALTER TABLE results DROP COLUMN same_as")
    if old != "5":
        db.execute("DROP TABLE profiles")
    if old not in ("4", "5"):
        db.execute("ALTER TABLE results DROP COLUMN gpu_state")
        db.execute("DROP TABLE measurements")
    if old in ("1", "2"):
        db.execute("ALTER TABLE results DROP COLUMN verified")
    if old == "1":
        db.execute("ALTER TABLE results DROP COLUMN deps")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (f'"{old}"',))
    db.commit()
    db.close()
    with Store(path, create=False) as store:
        (row,) = store.results()
        assert (row.status, row.verified, row.metrics) == (Status.OK, False, {"ms": 1.0})
        assert store.get_meta("schema") == SCHEMA_VERSION == "7"
        store.put(Result("v", "s", {"A": 2}, Status.OK, verified=True, metrics={"ms": 2.0},
                         gpu_state={"sm_clock_mhz": 1980}))
        assert [r.verified for r in store.results()] == [False, True]
        assert store.results()[1].gpu_state == {"sm_clock_mhz": 1980} and store.measurements() == []
        assert store.profiles() == []  # schema 5's table is there
        assert [h.params for h in store.history()] == [{"A": 1}, {"A": 2}]  # schema 6: the history, from the results
