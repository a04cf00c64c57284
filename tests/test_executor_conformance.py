"""Every executor passes the executor conformance suite (ksweep.testing.executor_suite):
the local executor on gcc-built programs, kernel mode's executor with its stand-in GPU
backend, the Dask executor on a local cluster, and the FakeExecutor."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from ksweep.run.executor import LocalExecutor
from ksweep.run.gpus import NO_GPU, Gpu
from ksweep.space.space import Space
from ksweep.spec.load import load_spec
from ksweep.status import Status
from ksweep.sweep.jobs import JobFactory
from ksweep.sweep.local import build_rules, make_builder, workspace
from ksweep.testing import FakeExecutor
from ksweep.testing.executor_suite import ExecutorCase, ExecutorSuite

from conftest import KERNELS, PROGRAMS, vadd_kernel_spec

FAKE_GPUS = [Gpu(0, "fake"), Gpu(1, "fake")]

# behaviours.c: MODE 0 reports ms=X, 1 hangs (with a child), 4 exits 3, 9 does not compile.
# Each run writes its pid to run-<MODE>.pids before it becomes the program.
PROGRAM = """
[sweep]
objective = "ms"
[params]
MODE = [0, 1, 4, 9]
X = [1, 2, 3, 4]
[build]
sources = ["behaviours.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
timeout = 120
[run]
command = ["sh", "-c", "echo $$ >> \\"$1\\"; exec \\"$0\\"", "{binary}", "{spec_dir}/run-{MODE}.pids"]
timeout = 600
"""

# harness.c loads the config's piece.c library and reports ms=10*X harness=<HARNESS_TAG>;
# built with BROKEN defined it does not compile.
HARNESS = """
[sweep]
objective = "ms"
[params]
X = [1, 2, 3]
[shapes.small]
defines = { HARNESS_TAG = 7 }
[shapes.broken]
defines = { BROKEN = 1 }
[build]
sources = ["piece.c"]
command = ["gcc", "-shared", "-fPIC", "{defines}", "-o", "{binary}", "piece.c"]
timeout = 120
[build.harness]
sources = ["harness.c"]
command = ["gcc", "{defines}", "-o", "{harness}", "harness.c", "-ldl"]
[run]
command = ["{harness}", "{binary}"]
timeout = 120
"""


def job_maker(spec, shape: str | None = None, mode=None):
    """config -> Job of ``spec``'s ``shape`` (as the driver makes them)."""
    sh, var = spec.shape(shape), spec.variant(None)
    return JobFactory(spec, sh, var, Space.from_spec(spec, sh.name, var.name), mode).make


def pids(path: Path) -> set[int]:
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def program_case(folder: Path) -> ExecutorCase:
    """The gcc-built programs' case, written into ``folder``."""
    for name in ("behaviours.c", "harness.c", "piece.c"):
        shutil.copy(PROGRAMS / name, folder / name)
    (folder / "program.toml").write_text(PROGRAM)
    (folder / "harness.toml").write_text(HARNESS)
    program, harnessed = load_spec(folder / "program.toml"), load_spec(folder / "harness.toml")
    job = job_maker(program)
    return ExecutorCase(
        good=job({"MODE": 0, "X": 1}), bad_build=job({"MODE": 9, "X": 1}), bad_run=job({"MODE": 4, "X": 1}),
        many=tuple((job({"MODE": 0, "X": x}), {"ms": x}) for x in (1, 2, 3, 4)),
        harness=job_maker(harnessed, "small")({"X": 2}), harness_metrics={"ms": 20, "harness": 7},
        broken_harness=job_maker(harnessed, "broken")({"X": 2}),
        hang=job({"MODE": 1, "X": 1}), hang_pids=lambda: pids(folder / "run-1.pids"),
    )


@pytest.fixture(scope="class")
def folder(tmp_path_factory, request):
    return tmp_path_factory.mktemp(request.cls.__name__)


class TestLocalExecutor(ExecutorSuite):
    @pytest.fixture
    def case(self, folder):
        return program_case(folder)

    @pytest.fixture
    def executor(self, folder, case):
        spec = load_spec(folder / "program.toml")
        with LocalExecutor(make_builder(spec), FAKE_GPUS, workspace(spec) / "scratch", build_jobs=2,
                           start_gap=0.0) as executor:
            yield executor


class TestPersistentHosts(ExecutorSuite):
    """The local executor with [run] persistent: each GPU's configs run in one host process."""

    @pytest.fixture
    def case(self, folder):
        for name in ("behaviours.c", "harness.c", "piece.c"):
            shutil.copy(PROGRAMS / name, folder / name)
        body = PROGRAM.replace('command = ["sh", "-c", "echo $$ >> \\"$1\\"; exec \\"$0\\"", "{binary}", '
                               '"{spec_dir}/run-{MODE}.pids"]', 'command = ["{binary}"]\npersistent = true')
        (folder / "program.toml").write_text(body)
        (folder / "harness.toml").write_text(HARNESS + "persistent = true\n")
        program, harnessed = load_spec(folder / "program.toml"), load_spec(folder / "harness.toml")
        job = job_maker(program)
        return ExecutorCase(
            good=job({"MODE": 0, "X": 1}), bad_build=job({"MODE": 9, "X": 1}), bad_run=job({"MODE": 4, "X": 1}),
            many=tuple((job({"MODE": 0, "X": x}), {"ms": x}) for x in (1, 2, 3, 4)),
            harness=job_maker(harnessed, "small")({"X": 2}), harness_metrics={"ms": 20, "harness": 7},
            broken_harness=job_maker(harnessed, "broken")({"X": 2}),
        )

    @pytest.fixture
    def executor(self, folder, case):
        spec = load_spec(folder / "program.toml")
        with LocalExecutor(make_builder(spec), FAKE_GPUS, workspace(spec) / "scratch", build_jobs=2,
                           start_gap=0.0) as executor:
            yield executor


# vadd with planted failures for the stand-in backend (as tests/kernels/fake_vadd.py): BLOCK=32
# faults, BLOCK=64 hangs (its worker writes its pid first); ELEMS=3 does not compile.
FAKE_KERNELS = """
import os
import time

from ksweep.kernel.backend import FakeFault


def vadd(params, grid, block, smem, c, a, b, n):
    if params.get("BLOCK") == 32:
        raise FakeFault("CUDA_ERROR_ILLEGAL_ADDRESS")
    if params.get("BLOCK") == 64:
        with open(PIDS, "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(3600)
    c[:] = a + b
"""

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@nvcc
class TestKernelExecutor(ExecutorSuite):
    @pytest.fixture
    def spec(self, folder):
        path = vadd_kernel_spec(folder, "BLOCK = [128, 256, 32, 64]\nELEMS = [1, 2, 3]", 4096,
                                "timeout = 600.0\ntiming = { warmup_ms = 1, budget_ms = 2, min_reps = 3, max_reps = 5 }")
        source = (KERNELS / "vadd.cu").read_text()
        (folder / "vadd.cu").write_text('#if ELEMS == 3\n#error "broken on purpose"\n#endif\n' + source)
        (folder / "fake_kernels.py").write_text(FAKE_KERNELS.replace("PIDS", repr(str(folder / "hang.pids"))))
        return load_spec(path)

    @pytest.fixture
    def case(self, folder, spec):
        from ksweep.kernel.mode import KernelMode

        job = job_maker(spec, mode=KernelMode(self.backend(folder)))
        return ExecutorCase(
            good=job({"BLOCK": 128, "ELEMS": 1}), bad_build=job({"BLOCK": 128, "ELEMS": 3}),
            bad_run=job({"BLOCK": 32, "ELEMS": 1}),
            many=tuple((job({"BLOCK": b, "ELEMS": e}), {}) for b in (128, 256) for e in (1, 2)),
            hang=job({"BLOCK": 64, "ELEMS": 1}), hang_pids=lambda: pids(folder / "hang.pids"),
        )

    @staticmethod
    def backend(folder: Path) -> str:
        return f"fake:{folder / 'fake_kernels.py'}"

    @pytest.fixture
    def executor(self, folder, spec, case):
        from ksweep.kernel.executor import KernelExecutor

        sizes = {s.name: {**spec.constants, **s.constants, **s.defines} for s in spec.shape_list()}
        with KernelExecutor(make_builder(spec), [NO_GPU], workspace(spec) / "scratch", spec.kernel, spec.root,
                            sizes, build_jobs=2, backend=self.backend(folder)) as executor:
            yield executor


@pytest.fixture
def dask_client(dask_cluster):
    """The client of the session's local Dask cluster (tests/conftest.py, as tests/test_dask.py
    uses it): two fake-GPU workers and a build worker."""
    client = dask_cluster[1]
    client.wait_for_workers(3, timeout=120)  # a worker another test killed is back
    return client


class TestDaskExecutor(ExecutorSuite):
    @pytest.fixture
    def case(self, folder):
        return program_case(folder)

    @pytest.fixture
    def executor(self, folder, case, dask_client):
        from ksweep.run.dask_executor import DaskExecutor

        spec = load_spec(folder / "program.toml")
        with DaskExecutor(dask_client, build_rules(spec), gpu_wait=60, start_gap=0.0) as executor:
            yield executor


class TestFakeExecutor(ExecutorSuite):
    @pytest.fixture
    def case(self, folder):
        return replace(program_case(folder), hang=None, hang_pids=None)  # no process to kill

    @pytest.fixture
    def executor(self, case):
        def answer(job):
            p = job.params
            if "MODE" not in p:  # the harness spec's configs
                return Status.OK, Status.OK, {"ms": 10 * p["X"], "harness": 7}
            return {0: (Status.OK, Status.OK, {"ms": p["X"]}), 4: (Status.OK, Status.RUN_ERROR),
                    9: (Status.COMPILE_ERROR, None)}[p["MODE"]]

        def harness(job):
            return Status.COMPILE_ERROR if job.shape == "broken" else Status.OK

        with FakeExecutor(answer, gpu_models=("fake", "fake"), harness=harness, completion="shuffled") as executor:
            yield executor


def test_the_fake_answers_from_a_table_by_values_or_config_id(tmp_path):
    case = program_case(tmp_path)
    fake = FakeExecutor({(0, 1): (Status.OK, Status.OK, {"ms": 1.0}), case.bad_run.config_id: (Status.OK, Status.HANG)},
                        completion="manual")
    builds = [fake.submit_build(case.good), fake.submit_build(case.bad_run)]
    assert fake.pending == 2 and not any(f.done() for f in builds)
    assert fake.release(1, newest_first=True) == 1 and builds[1].done() and not builds[0].done()
    fake.release()
    hang = fake.submit_run(case.bad_run, builds[1].result())
    fake.release()
    assert hang.result().status is Status.HANG and hang.result().message
    with pytest.raises(LookupError, match="no answer"):
        fake.submit_build(case.bad_build)
    fake.shutdown(cancel=True)
    assert fake.shutdowns == [True] and [j.config_id for j in fake.builds] == [case.good.config_id,
                                                                                 case.bad_run.config_id]
    with pytest.raises(RuntimeError, match="after shutdown"):
        fake.submit_build(case.good)


def test_a_fake_plan_that_breaks_the_rules_is_refused():
    from ksweep.testing import Planned

    with pytest.raises(ValueError, match="not a build's status"):
        Planned(Status.HANG, None)
    with pytest.raises(ValueError, match="use None"):
        Planned(Status.COMPILE_ERROR, Status.OK)
    with pytest.raises(ValueError, match="completion"):
        FakeExecutor({}, completion="later")
