"""Several GPUs on one host, without GPUs: two pretend GPUs, each run pinned with
CUDA_VISIBLE_DEVICES, recorded with its GPU, and the two slots running at once.

The test program (programs/devices.c) reports the CUDA_VISIBLE_DEVICES it saw, and meets
a run on another device at a rendezvous folder: ``overlap=1`` proves two runs were alive
at the same time, with no clock involved (a serial executor would report 0).
"""

import shutil
import textwrap

from ksweep import Status, load_spec
from ksweep.report.rank import group_results
from ksweep.result import Result
from ksweep.run.executor import LocalExecutor
from ksweep.run.gpus import NO_GPU, Gpu, select_gpus
from ksweep.store.sqlite import Store
from ksweep.strategies.base import Strategy
from ksweep.sweep.driver import Sweep, SweepOptions
from ksweep.sweep.local import make_builder, workspace

from conftest import PROGRAMS


class Grid(Strategy):
    """Every config in space order (the tests do not depend on the strategy registry)."""

    name = "grid"

    def __init__(self, space, seed: int = 0):
        super().__init__(space, seed)
        self._next = 0

    def _propose(self, n):
        stop = min(self._next + n, len(self.space))
        out = [self.space[i] for i in range(self._next, stop)]
        self._next = stop
        return out


def grid_factory(name, space, seed, max_evals):
    return Grid(space, seed)


DEVICES = """
[sweep]
objective = "ms"
[params]
X = [1, 2, 3, 4, 5, 6]
[build]
sources = ["devices.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "devices.c"]
timeout = 60
[run]
timeout = 120
env = { RENDEZVOUS_DIR = "RDIR" }
[check]
expected = { checksum = 1.0 }
"""


def devices_spec(folder, body: str = DEVICES, name: str = "devices.toml"):
    """Write the devices.c program and a spec for it into ``folder``; returns the spec's path."""
    shutil.copy(PROGRAMS / "devices.c", folder / "devices.c")
    rendezvous = folder / "rendezvous"
    rendezvous.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body).replace("RDIR", str(rendezvous)))
    return path


def sweep_with(spec, executor, db):
    with Store(db) as store:
        summary = Sweep(spec, store, executor, SweepOptions(confirm=None, strategy="grid"), strategy_factory=grid_factory).run()
        return summary, store.results()


TWO_GPUS = [Gpu(0, "A", "GPU-aaaa", "550.54"), Gpu(1, "A", "GPU-bbbb", "550.54")]


def test_two_gpus_run_at_once_each_pinned_and_recorded(tmp_path):
    spec = load_spec(devices_spec(tmp_path))
    executor = LocalExecutor(make_builder(spec), TWO_GPUS, workspace(spec) / "scratch", build_jobs=2)
    try:
        summary, results = sweep_with(spec, executor, tmp_path / "r.db")
    finally:
        executor.shutdown()
    assert summary.gpu_slots == 2
    assert [r.status for r in results] == [Status.OK] * 6
    assert {r.gpu_index for r in results} == {0, 1}  # both GPUs were used
    by_index = {g.index: g for g in TWO_GPUS}
    for r in results:
        gpu = by_index[r.gpu_index]
        assert r.metrics["dev"] == r.gpu_index  # the program saw CUDA_VISIBLE_DEVICES=<its GPU>
        assert (r.gpu_name, r.gpu_uuid, r.driver) == (gpu.name, gpu.uuid, gpu.driver)
        assert r.metrics["overlap"] == 1.0  # a run on the other GPU was alive at the same time
    assert {p.name for p in (tmp_path / "rendezvous").iterdir()} == {"started-0", "started-1"}


def test_one_gpu_selected_runs_only_there(tmp_path):
    spec = load_spec(devices_spec(tmp_path, DEVICES.replace("X = [1, 2, 3, 4, 5, 6]", "X = [1, 2]")
                                  .replace('env = { RENDEZVOUS_DIR = "RDIR" }', "")))
    gpus = select_gpus(TWO_GPUS, [1])
    executor = LocalExecutor(make_builder(spec), gpus, workspace(spec) / "scratch", build_jobs=2)
    try:
        _, results = sweep_with(spec, executor, tmp_path / "r.db")
    finally:
        executor.shutdown()
    assert [(r.status, r.gpu_index, r.gpu_uuid, r.metrics["dev"]) for r in results] == \
        [(Status.OK, 1, "GPU-bbbb", 1.0)] * 2


def test_select_gpus():
    assert select_gpus(TWO_GPUS, None) == TWO_GPUS  # default: every visible GPU
    assert select_gpus(TWO_GPUS, [1, 0]) == [TWO_GPUS[1], TWO_GPUS[0]]
    assert select_gpus(TWO_GPUS, [3]) == [Gpu(3, "unknown")]
    assert select_gpus([], None) == [NO_GPU]  # no GPU: one unpinned slot
    # an index asked for where nvidia-smi lists no GPU: of no model, so that a sweep that needs a
    # GPU is refused before building (as without the index), not built and failed config by config
    assert select_gpus([], [0]) == [Gpu(0, "none")]


def test_gpu_models_are_never_ranked_together():
    def result(x, gpu, ms):
        return Result(variant="v", shape="s", params={"X": x}, status=Status.OK, metrics={"ms": ms}, gpu_name=gpu)

    groups = group_results([result(1, "H100", 2.0), result(2, "H100", 1.0), result(1, "A100", 3.0)])
    assert {key: sorted(r.params["X"] for r in rows) for key, rows in groups.items()} == {
        ("v", "s", "H100", None): [1, 2], ("v", "s", "A100", None): [1]}
    one_model = group_results([result(1, "H100", 2.0), result(2, "H100", 1.0)])
    assert list(one_model) == [("v", "s", None, None)]


def test_a_phased_search_gets_a_table_per_phase():
    def result(x, phase):
        return Result(variant="v", shape="s", params={"X": x}, status=Status.OK, metrics={"ms": 1.0}, phase=phase)

    groups = group_results([result(1, "tier1"), result(2, "tier1"), result(3, "tier2"), result(4, "reference")])
    # the reference (defaults) config has no phase: it joins the first phase's table
    assert {key: [r.params["X"] for r in rows] for key, rows in groups.items()} == {
        ("v", "s", None, "tier1"): [1, 2, 4], ("v", "s", None, "tier2"): [3]}
    # without phases, one table
    assert list(group_results([result(1, None), result(4, "reference")])) == [("v", "s", None, None)]
