"""The Dask executor on a small LocalCluster: two fake-GPU workers (resource GPU=1, one
thread, CUDA_VISIBLE_DEVICES=0/1) and one build worker, all processes.

The gcc-built test programs are swept through it and must give the local executor's
results; a GPU worker is killed in the middle of a run and nothing is lost.
"""

import _thread
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

distributed = pytest.importorskip("distributed")

from ksweep import Status, load_spec  # noqa: E402
from ksweep.status import Stopped  # noqa: E402
from ksweep.errors import KsweepError, MissingDependency  # noqa: E402
from ksweep.run import dask_executor  # noqa: E402
from ksweep.run.dask_executor import (  # noqa: E402
    GPU_NAME_ENV, DaskExecutor, build_task, connect, run_task, worker_config, worker_gpu, worker_pin)
from ksweep.run.executor import LocalExecutor  # noqa: E402
from ksweep.run.gpus import NO_GPU, Gpu  # noqa: E402
from ksweep.run.program import RunOutcome  # noqa: E402
from ksweep.space.space import Space  # noqa: E402
from ksweep.sweep.jobs import JobFactory  # noqa: E402
from ksweep.app.wiring import make_dask_executor  # noqa: E402
from ksweep.sweep.local import build_rules, make_builder, workspace  # noqa: E402

from conftest import GCC_BUILD, ended_after, ksweep_cli  # noqa: E402
from test_multigpu import DEVICES, devices_spec, sweep_with  # noqa: E402

FAKE_GPUS = [Gpu(0, "fake"), Gpu(1, "fake")]


@pytest.fixture
def cluster(dask_cluster):
    """(cluster, client): 2 fake-GPU workers + 1 build worker (FAKE_GPUS), the session's one
    cluster (tests/conftest.py), shared with the other modules that sweep on Dask."""
    cl, client = dask_cluster
    client.wait_for_workers(3, timeout=120)  # a worker a test killed is back
    return cl, client


def dask_sweep(spec, client, db, **kw):
    executor = DaskExecutor(client, build_rules(spec), gpu_wait=60, **kw)
    try:
        return sweep_with(spec, executor, db)
    finally:
        executor.shutdown()


def local_sweep(spec, db):
    executor = LocalExecutor(make_builder(spec), [NO_GPU], workspace(spec) / "scratch", build_jobs=2)
    try:
        return sweep_with(spec, executor, db)
    finally:
        executor.shutdown()


def outcomes(results):
    return {tuple(sorted(r.params.items())): (r.status, r.message, dict(r.metrics)) for r in results}


MODES = f"""
[sweep]
objective = "ms"
[params]
MODE = [0, 1, 2, 3, 4, 5, 6, 7, 9]
X = [3]
{GCC_BUILD}
[run]
timeout = 2
[check]
expected = {{ checksum = 1.0 }}
"""


@pytest.mark.slow
def test_every_status_as_with_the_local_executor(program_dir, cluster):
    _, client = cluster
    spec = load_spec(program_dir(MODES))
    summary, remote = dask_sweep(spec, client, program_dir.dir / "dask.db")
    # the binaries travelled in the tasks: the client's own build cache was never used
    assert not (workspace(spec) / "cache").exists()
    _, local = local_sweep(spec, program_dir.dir / "local.db")
    assert outcomes(remote) == outcomes(local)
    assert {r.params["MODE"]: r.status for r in remote} == {
        0: Status.OK, 1: Status.HANG, 2: Status.CRASH, 3: Status.CRASH, 4: Status.RUN_ERROR,
        5: Status.CUDA_ERROR, 6: Status.NO_RESULT, 7: Status.CHECKSUM_MISMATCH, 9: Status.COMPILE_ERROR}
    ran = [r for r in remote if r.status is not Status.COMPILE_ERROR]
    assert {r.gpu_name for r in ran} == {"fake"} and {r.gpu_index for r in ran} <= {0, 1}
    assert summary.gpu_slots == 2 and summary.evaluated == 9


def test_persistent_hosts_on_the_gpu_workers(tmp_path, cluster):
    """With [run] persistent, each GPU worker runs its configs in one host process of its own."""
    from test_persistent import HOSTED, hosted_spec

    _, client = cluster
    spec = hosted_spec(tmp_path, HOSTED.replace("X = [1, 2, 3, 4]", "X = [1, 2, 3, 4, 5, 6]"))
    _, results = dask_sweep(spec, client, tmp_path / "dask.db", start_gap=0.0)
    assert [r.status for r in results] == [Status.OK] * 6
    pids = {}
    for r in results:
        assert (r.metrics["calls"], r.metrics["arg"], r.metrics["env"]) == (1, 7, 5)
        pids.setdefault(r.gpu_index, set()).add(r.metrics["pid"])
    assert all(len(p) == 1 for p in pids.values())  # one host per worker, reused
    assert len(set().union(*pids.values())) == len(pids)


def test_runs_are_pinned_to_their_workers_gpu_and_overlap(tmp_path, cluster):
    _, client = cluster
    spec = load_spec(devices_spec(tmp_path))
    _, results = dask_sweep(spec, client, tmp_path / "r.db")
    assert [r.status for r in results] == [Status.OK] * 6
    assert {r.gpu_index for r in results} == {0, 1}
    for r in results:
        assert r.metrics["dev"] == r.gpu_index and r.gpu_name == "fake"
        assert r.metrics["overlap"] == 1.0  # the two GPU workers ran at the same time


SLOW = f"""
[sweep]
objective = "ms"
[params]
MODE = [10]
X = [1, 2, 3, 4]
{GCC_BUILD.replace('"{{defines}}"', '"{{defines}}", "-DSLEEP_MS=300"')}
[run]
# note the start (the worker's pid: the shell's parent; the shell's own), wait for the GO file, run
command = ["sh", "-c", "echo \\"$PPID $$ {{X}}\\" >> \\"$START_LOG\\"; while [ ! -e \\"$GO\\" ]; do sleep 0.02; done; exec \\"$0\\"", "{{binary}}"]
timeout = 60
env = {{ KSWEEP_TEST_LOG = "DONE_LOG", START_LOG = "START_LOG_PATH", GO = "GO_PATH" }}
"""


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet waited for, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def reaper_of(pid: int) -> int:
    """The reaper (process.py) of the ksweep process that started process ``pid``: the one
    whose argv holds the session token in ``pid``'s environment."""
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    token = next(e.split(b"=", 1)[1] for e in env if e.startswith(b"KSWEEP_SESSION="))
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if token in argv and any(a.endswith(b"reaper.py") for a in argv):
            return int(entry.name)
    raise AssertionError(f"no reaper holds session {token}")


def test_a_worker_killed_mid_run_loses_nothing(program_dir, cluster):
    """A GPU worker is killed while its run is going. Its program, orphaned, is its reaper's to
    kill, and on a loaded machine the reaper may run late: this one runs only once the test is
    over (SIGSTOP), the worst load can do. Before, the orphan ran on beside the worker its nanny
    started on the same GPU, and finished; now that worker kills it before its first run there."""
    _, client = cluster
    done, started, go = program_dir.dir / "done.log", program_dir.dir / "started.log", program_dir.dir / "go"
    spec = load_spec(program_dir(SLOW.replace("DONE_LOG", str(done)).replace("START_LOG_PATH", str(started))
                                 .replace("GO_PATH", str(go))))
    gpu_workers = [a for a, w in client.scheduler_info(n_workers=-1)["workers"].items() if w["resources"].get("GPU")]
    worker_pids = set(client.run(os.getpid, workers=gpu_workers).values())
    killed: list[tuple[int, str]] = []
    stopped: list[int] = []
    orphan_killed: list[bool] = []

    def kill_the_first_run_s_worker():  # no run gets past its start until this is done
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline:
                lines = started.read_text().split("\n")[:-1] if started.exists() else []
                if lines:
                    pid, shell, x = lines[0].split()
                    assert int(pid) in worker_pids, (pid, worker_pids)
                    stopped.append(reaper_of(int(shell)))
                    os.kill(stopped[0], signal.SIGSTOP)
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append((int(pid), x))
                    # the orphaned run is for the next worker on that GPU to kill: GO waits for it
                    # (were it left alive, it would run to its end too and done.log tell)
                    deadline = time.monotonic() + 120
                    while time.monotonic() < deadline and alive(int(shell)):
                        time.sleep(0.01)
                    orphan_killed.append(not alive(int(shell)))
                    return
                time.sleep(0.01)
        finally:
            go.touch()

    killer = threading.Thread(target=kill_the_first_run_s_worker)
    killer.start()
    try:
        summary, remote = dask_sweep(spec, client, program_dir.dir / "dask.db")
    finally:
        killer.join()
        for reaper in stopped:  # it reads its end of file, finds nothing left, and exits
            os.kill(reaper, signal.SIGCONT)
    assert len(killed) == 1 and orphan_killed == [True]  # killed while the reaper was stopped
    pid, x = killed[0]
    starts = [line.split() for line in started.read_text().splitlines()]
    assert [s[2] for s in starts].count(x) == 2  # the killed run started again ...
    assert [s[0] for s in starts if s[2] == x][1] != str(pid)  # ... on another worker process
    assert sorted(done.read_text().splitlines()) == [f"MODE=10 X={i}" for i in range(1, 5)]  # each ran to its end once
    assert [r.status for r in remote] == [Status.OK] * 4 and summary.evaluated == 4
    started.unlink()
    _, local = local_sweep(spec, program_dir.dir / "local.db")
    assert {k: (s, m) for k, (s, _, m) in outcomes(remote).items()} == \
        {k: (s, m) for k, (s, _, m) in outcomes(local).items()}
    client.wait_for_workers(3, timeout=120)  # the nanny restarted the killed worker


def test_shared_cache_binaries_travel_by_path(program_dir, cluster):
    _, client = cluster
    spec = load_spec(program_dir(MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 9]", "MODE = [0, 7]")))
    shared = program_dir.dir / "shared-cache"
    _, results = dask_sweep(spec, client, program_dir.dir / "r.db", shared_cache=shared)
    assert {r.params["MODE"]: r.status for r in results} == {0: Status.OK, 7: Status.CHECKSUM_MISMATCH}
    entries = [p for p in shared.iterdir() if p.is_dir()]
    assert len(entries) == 2 and all((p / "prog").exists() for p in entries)


def test_connect_to_a_running_scheduler(tmp_path, cluster):
    cl, client = cluster
    spec = load_spec(devices_spec(tmp_path, DEVICES.replace("X = [1, 2, 3, 4, 5, 6]", "X = [1, 2]")
                                  .replace('env = { RENDEZVOUS_DIR = "RDIR" }', "")))
    executor = connect(cl.scheduler_address, build_rules(spec), timeout=60)
    try:
        assert executor.run_slots == 2
        _, results = sweep_with(spec, executor, tmp_path / "r.db")
    finally:
        executor.shutdown()
    assert [r.status for r in results] == [Status.OK] * 2
    assert client.status == "running"  # only the executor's own client was closed


HANGS = f"""
[params]
MODE = [1]
X = [1, 2]
{GCC_BUILD}
[run]
timeout = 120
"""


def programs_of(folder) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout  # -ww: whole lines
    return [line for line in out.splitlines() if str(folder) in line and "/prog" in line and "gcc" not in line]


def test_interrupt_kills_the_runs_on_the_workers_which_then_run_again(program_dir, cluster):
    _, client = cluster
    spec = load_spec(program_dir(HANGS))

    def interrupt_when_both_hang():  # each hanging program has forked a child: 4 processes
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(programs_of(program_dir.dir)) < 4:
            time.sleep(0.05)
        assert len(programs_of(program_dir.dir)) == 4
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_when_both_hang)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):  # (a shared cache, so that `ps` shows where the binaries are)
            dask_sweep(spec, client, program_dir.dir / "r.db", shared_cache=program_dir.dir / "cache")
    finally:
        interrupter.join()
    deadline = time.monotonic() + 10
    while programs_of(program_dir.dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert programs_of(program_dir.dir) == []  # the programs and the children they forked
    ok = load_spec(program_dir(MODES.replace("MODE = [0, 1, 2, 3, 4, 5, 6, 7, 9]", "MODE = [0]"), name="ok.toml"))
    _, results = dask_sweep(ok, client, program_dir.dir / "ok.db")
    assert [r.status for r in results] == [Status.OK]


@pytest.mark.parametrize("persistent", [False, True], ids=["process", "persistent"])
def test_a_harness_is_built_once_and_reaches_every_run(tmp_path, cluster, persistent):
    from test_harness import EXPECTED, SPEC, harness_builds, harness_spec, values

    _, client = cluster
    body = SPEC.replace("timeout = 20", "timeout = 20\npersistent = true") if persistent else SPEC
    if persistent:  # the host loads the harness: it is built by the compiler itself, with library flags
        body = body.replace('command = ["sh", "{spec_dir}/count.sh", "{spec_dir}/harness_builds.log", "gcc",',
                            'command = ["gcc",')
    spec = harness_spec(tmp_path, body)
    _, remote = dask_sweep(spec, client, tmp_path / "dask.db", start_gap=0.0)
    assert values(remote) == EXPECTED
    if not persistent:
        assert harness_builds(tmp_path) == 1  # one build task, however many runs
    _, local = local_sweep(spec, tmp_path / "local.db")
    assert {k: v[:2] for k, v in outcomes(remote).items()} == {k: v[:2] for k, v in outcomes(local).items()}


# -- the worker side, in this process ----------------------------------------------------


def one_job(spec, **config):
    shape, variant = spec.shape_list()[0], spec.variant_list()[0]
    space = Space.from_spec(spec, shape.name, variant.name)
    return JobFactory(spec, shape, variant, space).make(config)


def test_build_task_ships_the_binary_and_run_task_writes_it_out(tmp_path, monkeypatch):
    monkeypatch.setattr(dask_executor, "_worker_dir", lambda: tmp_path / "worker")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7,3")  # the run sees only the first
    monkeypatch.setenv(GPU_NAME_ENV, "pretend")
    dask_executor._this_worker_gpu.cache_clear()
    spec = load_spec(devices_spec(tmp_path, DEVICES.replace('env = { RENDEZVOUS_DIR = "RDIR" }', "")))
    job = one_job(spec, X=4)
    built = build_task(job, build_rules(spec), None)
    assert built.result.status is Status.OK and built.binary[:4] == b"\x7fELF"
    for entry in (tmp_path / "worker" / "ksweep-cache").iterdir():  # the run must not need the cache
        os.rename(entry, tmp_path / f"gone-{entry.name}")
    try:
        outcome = run_task(job, built)
    finally:
        dask_executor._this_worker_gpu.cache_clear()
    assert outcome.status is Status.OK, outcome.message
    assert outcome.metrics["ms"] == 4.0 and outcome.metrics["dev"] == 7.0  # pinned to the worker's GPU only
    assert outcome.gpu == Gpu(7, "pretend")
    assert list((tmp_path / "worker").glob("bin-*")) == []  # the written binary is removed again
    shared = build_task(job, build_rules(spec), str(tmp_path / "shared"))
    assert shared.binary is None and shared.result.binary.parent.parent == tmp_path / "shared"


def test_run_task_writes_a_harness_out_once(tmp_path, monkeypatch):
    from test_harness import harness_spec

    monkeypatch.setattr(dask_executor, "_worker_dir", lambda: tmp_path / "worker")
    monkeypatch.setenv(GPU_NAME_ENV, "pretend")
    dask_executor._this_worker_gpu.cache_clear()
    spec = harness_spec(tmp_path)
    jobs = [one_job(spec, X=x) for x in (2, 3)]
    harness = build_task(jobs[0].harness, build_rules(spec), None)
    assert harness.binary[:4] == b"\x7fELF"
    try:
        outcomes = [run_task(job, build_task(job, build_rules(spec), None), 0.0, harness) for job in jobs]
    finally:
        dask_executor._this_worker_gpu.cache_clear()
    assert [(o.status, o.metrics["ms"]) for o in outcomes] == [(Status.OK, 20.0), (Status.OK, 30.0)]
    written = [p for p in (tmp_path / "worker" / "harness").rglob("*") if p.is_file()]
    assert [p.relative_to(tmp_path / "worker" / "harness").parts for p in written] == [
        (jobs[0].harness.cache_key, "harness")]  # one copy, by key, for both runs


def test_worker_gpu():
    h100 = [Gpu(0, "H100", "GPU-a", "580"), Gpu(1, "H100", "GPU-b", "580")]
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "1"}, h100) == h100[1]
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "GPU-b"}, h100) == h100[1]
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "1", GPU_NAME_ENV: "fake"}, []) == Gpu(1, "fake")
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "3"}, h100) == Gpu(3, "unknown")
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "MIG-x"}, h100) == Gpu(None, "unknown", uuid="MIG-x")
    assert worker_gpu({}, h100[:1]) == h100[0]  # a worker on a one-GPU node needs no pin
    assert worker_gpu({}, []) == Gpu(None, "none")
    with pytest.raises(KsweepError, match="sees 2 GPUs"):
        worker_gpu({}, h100)
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": "1,0"}, h100) == h100[1]  # dask-cuda: its own GPU first
    assert worker_gpu({"CUDA_VISIBLE_DEVICES": ""}, h100) == Gpu(None, "none")
    assert worker_pin({"CUDA_VISIBLE_DEVICES": " GPU-b, GPU-a"}) == "GPU-b" and worker_pin({}) is None


# -- the client side, against a fake client ------------------------------------------------


class FakeFuture:
    def __init__(self, value=None, error=None):
        self.value, self.error = value, error

    def result(self, timeout=None):
        if self.error:
            raise self.error
        return self.value

    def add_done_callback(self, fn):
        fn(self)


class FakeClient:
    """Answers like a scheduler with one GPU worker and one build worker; every task 'kills its worker'."""

    def __init__(self):
        self.submitted = []
        self.plugins = []

    def register_plugin(self, plugin):
        self.plugins.append(plugin)

    def scheduler_info(self, n_workers=-1):
        return {"workers": {"tcp://gpu": {"resources": {"GPU": 1}, "nthreads": 1},
                            "tcp://cpu": {"resources": {}, "nthreads": 8}}}

    def submit(self, fn, *args, **kw):
        self.submitted.append((fn.__name__, kw))
        return FakeFuture(error=distributed.KilledWorker("task-x", SimpleNamespace(address="tcp://gpu"), 3))


def test_a_config_that_keeps_killing_workers_becomes_a_result(tmp_path):
    client = FakeClient()
    spec = load_spec(devices_spec(tmp_path))
    job = one_job(spec, X=1)
    executor = DaskExecutor(client, build_rules(spec))
    assert (executor.run_slots, executor.build_jobs) == (1, 8)
    build = executor.submit_build(job).result()
    assert build.status is Status.COMPILE_ERROR
    assert build.message.startswith("the build killed every Dask worker that ran it (4 workers, the last tcp://gpu)")
    outcome = executor.submit_run(job, build).result()
    assert isinstance(outcome, RunOutcome) and outcome.status is Status.CRASH
    assert "allowed-failures" in outcome.message
    (b, build_kw), (m, _), (r, run_kw) = client.submitted
    assert (b, m, r) == ("build_task", "build_metadata", "run_task")
    assert build_kw["workers"] == ["tcp://cpu"] and build_kw["allow_other_workers"]  # builds prefer CPU workers
    assert run_kw["resources"] == {"GPU": 1} and run_kw["retries"] == 2
    # every worker kills its programs when it closes
    assert [(p.name, p.fn, p.idempotent) for p in client.plugins] == [
        ("ksweep-worker-leaving", dask_executor.worker_leaving, True)]


def test_missing_distributed_gives_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependency, match=r"pip install 'ksweep\[dask\]'"):
        connect("tcp://127.0.0.1:1", build_rules(load_spec(devices_spec(tmp_path))))


# -- the command line ------------------------------------------------------------------------


def run_cli(*args):
    return ksweep_cli(*args)  # in this process: what the command says and stores (tests/conftest.py)


def test_kernel_mode_specs_and_remote_gpu_choices_are_refused(tmp_path):
    with pytest.raises(KsweepError, match="program-mode"):
        make_dask_executor(SimpleNamespace(kernel=object(), label="k.toml"), "local")
    with pytest.raises(KsweepError, match="--gpus and --fake-gpus"):
        make_dask_executor(load_spec(devices_spec(tmp_path)), "tcp://127.0.0.1:1", gpus=[0])


def test_cli_fake_gpus_needs_a_cluster(tmp_path):
    r = run_cli("run", str(devices_spec(tmp_path)), "--fake-gpus", "2")
    assert r.returncode == 2 and "--cluster local" in r.stderr


@pytest.mark.slow
# its own local cluster, beside the session's in this process: distributed says the port of the
# first one's HTTP server is taken and takes another
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
def test_cli_cluster_local(tmp_path):
    strategies = pytest.importorskip("ksweep.strategies")
    if not hasattr(strategies, "make_strategy"):
        pytest.skip("the strategy registry (ksweep.strategies.make_strategy) is not there yet")
    spec = devices_spec(tmp_path, DEVICES.replace("X = [1, 2, 3, 4, 5, 6]", "X = [1, 2, 3, 4]"))
    r = run_cli("run", str(spec), "--cluster", "local", "--fake-gpus", "2", "-j", "1", "--strategy", "grid",
                "-q")
    assert r.returncode == 0, r.stderr
    records = run_cli("report", str(tmp_path / ".ksweep" / "devices.db"), "--format", "json").stdout
    import json

    rows = json.loads(records)
    assert sorted(r["status"] for r in rows) == ["OK"] * 4
    assert {r["gpu"]["index"] for r in rows} == {0, 1} and {r["gpu"]["name"] for r in rows} == {"fake"}
    assert all(r["metrics"]["dev"] == r["gpu"]["index"] and r["metrics"]["overlap"] == 1 for r in rows)
    assert len([p for p in (tmp_path / ".ksweep" / "cache").iterdir() if p.is_dir()]) == 4  # the shared default


@pytest.mark.slow
def test_cli_ctrl_c_on_a_local_cluster_stops_everything(program_dir):
    strategies = pytest.importorskip("ksweep.strategies")
    if not hasattr(strategies, "make_strategy"):
        pytest.skip("the strategy registry (ksweep.strategies.make_strategy) is not there yet")
    spec = program_dir(HANGS)
    # its own process group, signalled as a whole: as a terminal's Ctrl-C reaches the workers too
    proc = subprocess.Popen([sys.executable, "-m", "ksweep.cli.main", "run", str(spec), "--cluster", "local",
                             "--fake-gpus", "2", "-j", "1", "--strategy", "grid", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    with ended_after(proc, group=True):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(programs_of(program_dir.dir)) < 4:
            time.sleep(0.05)
        assert len(programs_of(program_dir.dir)) == 4
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    deadline = time.monotonic() + 10
    while programs_of(program_dir.dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert programs_of(program_dir.dir) == []
    assert "Traceback" not in err


@pytest.mark.parametrize("cluster, shared", [("tcp://10.0.0.1:8786", None), ("local", "beside the db")])
def test_a_remote_cluster_gets_the_binaries_in_its_tasks(tmp_path, monkeypatch, cluster, shared):
    """`ksweep run --cluster tcp://…` named the cache beside the database as a cache every
    worker sees: a worker on another host could not find any binary, and every run failed
    with "the run command cannot be started"."""
    import ksweep.app.sweep as app_sweep

    seen = {}

    class Seen(Exception):
        pass

    def fake(spec, cluster, **kw):
        seen.update(kw)
        raise Seen

    monkeypatch.setattr(app_sweep, "make_dask_executor", fake)
    spec = load_spec(devices_spec(tmp_path))
    with pytest.raises(Seen):
        app_sweep.tune(spec, db=tmp_path / "x.db", cluster=cluster)
    expected = None if shared is None else (tmp_path / "cache").resolve()
    assert seen["shared_cache"] == expected


def test_stopping_one_sweep_leaves_another_sweeps_runs_on_a_shared_cluster(program_dir, cluster):
    """On a cluster that outlives a sweep, the stop of one sweep killed every process the
    workers had started, another client's runs too (stored there as CRASH, killed by SIGKILL)."""
    _, client = cluster
    spec = load_spec(program_dir(HANGS.replace("X = [1, 2]", "X = [1]")))
    shape, variant = spec.shape_list()[0], spec.variant_list()[0]
    space = Space.from_spec(spec, shape.name, variant.name)
    job = JobFactory(spec, shape, variant, space).make(space[0])
    # a shared cache, so that `ps` shows where the binaries are
    mine = DaskExecutor(client, build_rules(spec), gpu_wait=60, shared_cache=program_dir.dir / "cache")
    other = DaskExecutor(client, build_rules(spec), gpu_wait=60)
    try:
        build = mine.submit_build(job).result(timeout=120)
        assert build.status is Status.OK
        run = mine.submit_run(job, build)
        deadline = time.monotonic() + 120
        while not programs_of(program_dir.dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert programs_of(program_dir.dir)
        other.shutdown(cancel=True)  # another sweep on the same cluster is stopped
        # its stop has sent its kills when it returns (client.run waits for every worker): a
        # program it killed is gone within milliseconds, well under this
        deadline = time.monotonic() + 1
        while programs_of(program_dir.dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert programs_of(program_dir.dir) and not run.done()
    finally:
        mine.shutdown(cancel=True)
    deadline = time.monotonic() + 20
    while programs_of(program_dir.dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert programs_of(program_dir.dir) == []  # its own stop still kills them


def test_stopping_a_sweep_stops_its_run_on_a_workers_persistent_host(tmp_path):
    """A worker's persistent host serves every sweep on the cluster: its runs were tracked in
    the worker's default registry, so stopping one sweep (on a cluster it does not own) left
    its run going to the timeout."""
    started = tmp_path / "started"
    (tmp_path / "hang.c").write_text('#include <stdio.h>\n#include <unistd.h>\nint main(void) {\n'
                                     f'  FILE *f = fopen("{started}", "w"); fclose(f); sleep(120);\n'
                                     '  printf("@@RESULT ms=1\\n"); return 0; }\n')
    (tmp_path / "hang.toml").write_text('[sweep]\nobjective = "ms"\n[params]\nX = [1]\n[build]\nsources = ["hang.c"]\n'
                                        'command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "hang.c"]\n'
                                        '[run]\ncommand = ["{binary}"]\ntimeout = 300\npersistent = true\n')
    spec = load_spec(tmp_path / "hang.toml")
    shape, variant = spec.shape_list()[0], spec.variant_list()[0]
    space = Space.from_spec(spec, shape.name, variant.name)
    job = JobFactory(spec, shape, variant, space).make(space[0])
    built = dask_executor.build_task(job, build_rules(spec), None, "sweep-a")
    assert built.result.status is Status.OK, built.result.message
    out = {}
    runner = threading.Thread(target=lambda: out.setdefault("r", dask_executor.run_task(job, built, 0.0, None,
                                                                                      "sweep-a")))
    try:
        runner.start()
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        assert dask_executor._stop_runs("sweep-a", True) >= 1  # a cluster that outlives the sweep
        runner.join(timeout=60)
        assert not runner.is_alive()  # stopped, not left to its 300 s timeout
        late = dask_executor.run_task(job, built, 0.0, None, "sweep-a")  # a task of the stopped sweep, late
        assert isinstance(late, Stopped)
    finally:
        for host in dask_executor._hosts.values():
            host.close(kill=True)
        dask_executor._hosts.clear()
        runner.join(timeout=60)


def program_pids(folder) -> dict[int, int]:
    """pid -> parent pid of the test programs under ``folder`` that run."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    return {int(pid): int(ppid) for pid, ppid, args in (line.split(None, 2) for line in out.splitlines())
            if str(folder) in args and "/prog" in args and "gcc" not in args}


def test_a_worker_that_closes_kills_its_run_which_runs_again_on_another(program_dir, cluster):
    """A worker that closes (its nanny restarts it here; retired, its scheduler lost or
    SIGTERM alike) kills its programs itself, its reaper being stopped (as a loaded machine
    may leave it). Before, the hanging program ran on after its worker had gone. The run
    gives no answer from the closed worker: it is run again, on another."""
    _, client = cluster
    spec = load_spec(program_dir(HANGS.replace("X = [1, 2]", "X = [1]")))
    job = one_job(spec, MODE=1, X=1)
    mine = DaskExecutor(client, build_rules(spec), gpu_wait=60, shared_cache=program_dir.dir / "cache")
    stopped = []
    try:
        build = mine.submit_build(job).result(timeout=120)
        assert build.status is Status.OK
        run = mine.submit_run(job, build)
        deadline = time.monotonic() + 120
        while len(program_pids(program_dir.dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the program and the child it forked
        first = program_pids(program_dir.dir)
        worker_pid = next(ppid for pid, ppid in first.items() if ppid not in first)
        address = next(a for a, pid in client.run(os.getpid).items() if pid == worker_pid)
        stopped.append(reaper_of(next(iter(first))))
        os.kill(stopped[0], signal.SIGSTOP)
        client.restart_workers([address], timeout=60)
        assert not [pid for pid in first if alive(pid)]  # killed by the closing worker
        deadline = time.monotonic() + 120
        while not set(program_pids(program_dir.dir)) - set(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert set(program_pids(program_dir.dir)) - set(first) and not run.done()  # started again
    finally:
        mine.shutdown(cancel=True)
        for reaper in stopped:
            os.kill(reaper, signal.SIGCONT)


def test_a_task_of_a_closing_worker_reschedules_instead_of_answering(program_dir, monkeypatch):
    """On a worker that closes, a run in flight has its program killed and raises Reschedule
    (the scheduler gives it to another worker), as does every task that starts later: what a
    killed program did is not the config's result (here a CRASH, or a stop taken for Ctrl-C)."""
    monkeypatch.setattr(dask_executor, "_worker_dir", lambda: program_dir.dir / "worker")
    monkeypatch.setenv(GPU_NAME_ENV, "pretend")
    dask_executor._this_worker_gpu.cache_clear()
    spec = load_spec(program_dir(HANGS.replace("X = [1, 2]", "X = [1]")))
    job = one_job(spec, MODE=1, X=1)
    built = build_task(job, build_rules(spec), None, "closing-worker")
    out = {}

    def run():
        try:
            out["value"] = run_task(job, built, 0.0, None, "closing-worker")
        except BaseException as exc:  # noqa: BLE001 - what it raised is the test's
            out["raised"] = exc

    runner = threading.Thread(target=run)
    try:
        runner.start()
        deadline = time.monotonic() + 60
        while len(programs_of(program_dir.dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(programs_of(program_dir.dir)) == 2
        dask_executor.worker_leaving()
        runner.join(timeout=60)
        assert isinstance(out.get("raised"), distributed.Reschedule), out
        assert programs_of(program_dir.dir) == []
        with pytest.raises(distributed.Reschedule):
            run_task(job, built, 0.0, None, "closing-worker")
        with pytest.raises(distributed.Reschedule):
            build_task(job, build_rules(spec), None, "closing-worker")
    finally:
        dask_executor._LEAVING.clear()  # this process goes on: its registries may start processes again
        for registry in [*dask_executor._registries.values(), dask_executor.DEFAULT_REGISTRY]:
            registry.reset_stop()
        dask_executor._this_worker_gpu.cache_clear()
        runner.join(timeout=60)


def test_a_worker_its_nanny_restarts_is_not_closed_as_lost_meanwhile():
    """A local cluster's nanny brings its worker back itself. distributed's cluster object also
    closes, ``lost-worker-timeout`` after a worker left, the nanny of a worker of that name not
    back by then: a restart that takes longer (a loaded machine; or a second restart that
    timeout after an earlier one) lost the GPU for the rest of the sweep. Here the timeout is
    made short so that the restart always takes longer."""
    import dask

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.05s"}):
        cluster = dask_executor.local_cluster([Gpu(0, "fake")], build_workers=0)
        client = distributed.Client(cluster)
        try:
            client.wait_for_workers(1, timeout=120)
            address = next(iter(client.scheduler_info(n_workers=-1)["workers"]))
            client.restart_workers([address], timeout=60)
            client.wait_for_workers(1, timeout=60)
            assert [w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()] == ["gpu-0"]
        finally:
            client.close()
            cluster.close()


class _OneGpuClient:
    """What DaskExecutor asks of its client before any task: a cluster with one GPU worker."""

    def register_plugin(self, plugin):
        pass

    def scheduler_info(self, n_workers=-1):
        return {"workers": {"tcp://gpu": {"resources": {"GPU": 1}, "nthreads": 1}}}


class _FinishedTask:
    """A dask future whose value is fetched when ``fetched`` is set (as a Future's ``result``
    goes to the scheduler and to the worker that holds the value)."""

    def __init__(self, value, fetched: threading.Event):
        self.value, self.fetched, self._callbacks = value, fetched, []

    def add_done_callback(self, fn):
        self._callbacks.append(fn)

    def finish(self, callback_thread):
        for fn in self._callbacks:
            callback_thread.submit(fn, self)

    def result(self, timeout=None):
        if not self.fetched.wait(timeout):
            raise TimeoutError(f"not fetched in {timeout} s")  # as distributed's Future.result says it
        return self.value


def test_a_value_slow_to_fetch_holds_back_no_other_result_of_any_sweep():
    """distributed runs the done callbacks of every client of a process on one thread. The
    executor fetched each task's value there: a fetch that did not return (the task of a sweep
    that had ended, its key released) held every later result of every sweep in the process,
    and a sweep on the test session's cluster waited for ever."""
    from concurrent.futures import CancelledError, ThreadPoolExecutor

    callback_thread = ThreadPoolExecutor(1)  # distributed's, shared by every client
    never, now = threading.Event(), threading.Event()
    now.set()
    ended = DaskExecutor(_OneGpuClient(), None, gpu_wait=0)
    running = DaskExecutor(_OneGpuClient(), None, gpu_wait=0)
    stuck_before = _FinishedTask("lost", never)
    left = ended._bridge(stuck_before, lambda v: v, lambda exc: exc)
    stuck = _FinishedTask("slow", never)
    slow = running._bridge(stuck, lambda v: v, lambda exc: exc)
    fine = _FinishedTask(7, now)
    result = running._bridge(fine, lambda v: v * 2, lambda exc: exc)
    try:
        stuck_before.finish(callback_thread)  # before its sweep ended
        ended.shutdown()
        stuck.finish(callback_thread)  # one of this sweep's own
        fine.finish(callback_thread)
        assert result.result(timeout=60) == 14  # a bound on a hang, not a time raced
        assert not slow.done()
        with pytest.raises(CancelledError):  # what the ended sweep still waited for, answered then
            left.result(timeout=60)
    finally:
        never.set()
        running.shutdown()
        callback_thread.shutdown(wait=True)


def test_a_value_that_never_arrives_is_answered_as_lost_not_waited_for():
    """A finished task whose value never arrives (the worker that held it gone, its key
    released) held one of the executor's fetch threads for ever, and as many such as it has
    threads held every later result of the sweep. A fetch has a bound (``fetch_timeout``):
    past it the task is answered as a lost one, saying why, and the other results come."""
    from concurrent.futures import ThreadPoolExecutor

    callback_thread = ThreadPoolExecutor(1)
    never, now = threading.Event(), threading.Event()
    now.set()
    executor = DaskExecutor(_OneGpuClient(), None, gpu_wait=0, fetch_timeout=0.5)
    lost = [_FinishedTask(i, never) for i in range(dask_executor.FETCH_THREADS + 1)]
    answers = [executor._bridge(t, lambda v: v, lambda exc: dask_executor._killed_message("run", exc)) for t in lost]
    fine = _FinishedTask(7, now)
    result = executor._bridge(fine, lambda v: v * 2, lambda exc: exc)
    try:
        for task in [*lost, fine]:
            task.finish(callback_thread)
        assert result.result(timeout=60) == 14  # a bound on a hang, not a time raced
        said = [answer.result(timeout=60) for answer in answers]
        assert said == ["the run's result could not be fetched from the cluster within 0.5 s (the worker that "
                        "held it lost?); not tried again"] * len(lost), said
    finally:
        never.set()
        executor.shutdown()
        callback_thread.shutdown(wait=True)


def test_a_task_that_raised_a_timeout_is_its_own_error_not_a_fetch_that_timed_out():
    """``Future.result`` raises the task's own exception too: a task that raised TimeoutError
    (a shared cache's file system not answering) was said as a value never fetched."""
    executor = DaskExecutor(_OneGpuClient(), None, gpu_wait=0)
    task = FakeFuture(error=TimeoutError("the shared cache did not answer"))
    task.status = "error"  # as distributed's Future says of a task that raised
    try:
        answer = executor._bridge(task, lambda v: v, lambda exc: dask_executor._killed_message("run", exc))
        with pytest.raises(TimeoutError, match="shared cache"):
            answer.result(timeout=60)
    finally:
        executor.shutdown()


def test_a_local_clusters_workers_run_no_statistical_profiler(cluster):
    """The local cluster has no dashboard, so nobody reads what distributed's statistical
    profiler samples (every 10 ms, in each worker): it took most of the idle cluster's CPU,
    which the builds on the same host need. The workers run without it."""
    _, client = cluster
    enabled = client.run(lambda: __import__("dask").config.get("distributed.worker.profile.enabled"))
    assert len(enabled) == 3 and set(enabled.values()) == {False}, enabled


def test_the_workers_config_leaves_an_idle_workers_cpu_to_the_builds_and_keeps_the_rest():
    """No profiler, the loop's and the memory's watch once a second (an idle local cluster took
    2.7 to 3.1 CPU-seconds in 30 s, now 1.4 to 1.6: bench/idle_cluster.py); every other setting as given,
    deep: a nanny puts the config it is given in place of its process's top-level keys, and a
    config of the three settings alone left the workers without the rest and they never started."""
    base = {"distributed": {"worker": {"memory": {"target": 0.6}, "preload": []},
                            "admin": {"tick": {"limit": "3s"}}, "scheduler": {"allowed-failures": 3}},
            "temporary-directory": "/scratch"}
    config = worker_config(base)
    worker, admin = config["distributed"]["worker"], config["distributed"]["admin"]
    assert worker["profile"]["enabled"] is False
    assert worker["memory"] == {"target": 0.6, "monitor-interval": "1s"}
    assert admin["tick"] == {"limit": "3s", "interval": "1s"}
    assert config["distributed"]["scheduler"] == {"allowed-failures": 3} and config["temporary-directory"] == "/scratch"
    assert base["distributed"]["worker"]["memory"] == {"target": 0.6}  # the process's own config untouched


def test_a_local_workers_heartbeat_that_finds_its_scheduler_closed_says_nothing():
    """A local cluster's scheduler lives in ksweep run's own process and goes only when that
    closes it; a worker's heartbeat under way then logged "Failed to communicate with scheduler
    during heartbeat" and a traceback on the user's terminal after a Ctrl-C (seen once in a
    full test run). The workers' preload drops that record and nothing else, once however
    often it runs."""
    import logging

    worker_log = logging.getLogger("distributed.worker")
    kept = list(worker_log.filters)
    try:
        dask_executor.quiet_heartbeat_failures()
        dask_executor.quiet_heartbeat_failures()
        assert len(worker_log.filters) == len(kept) + 1

        def record(message):
            return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, message, None, None)

        assert not worker_log.filter(record("Failed to communicate with scheduler during heartbeat."))
        assert worker_log.filter(record("Unexpected exception during heartbeat. Closing worker."))
        assert worker_log.filter(record("Compute Failed"))
    finally:
        worker_log.filters[:] = kept
