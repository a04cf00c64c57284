"""docs/cluster.md's recipe for a cluster of several hosts, on this one: a `dask scheduler`, a
build worker and two GPU workers (fake GPUs), each a `dask worker` command of its own as the
docs start them (a nanny and a worker process each), a cache every worker sees, and
`ksweep run --cluster tcp://…`. One GPU worker is killed, nanny and all, as a lost host
would be, in the middle of the sweep: the sweep gives the local executor's results, every
config stored once, and every program run to its end once."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

from ksweep.store.sqlite import Store  # noqa: E402

from conftest import GCC_BUILD, ksweep_cli  # noqa: E402
from test_dask import alive  # noqa: E402

# runs note their start (the worker's pid: the shell's parent; the shell's own) and wait for GO
SPEC = f"""
[sweep]
objective = "ms"
[params]
MODE = [10, 7, 9]
X = [1, 2, 3]
{GCC_BUILD}
[run]
command = ["sh", "-c", "echo \\"$PPID $$ {{MODE}} {{X}}\\" >> \\"$START_LOG\\"; while [ ! -e \\"$GO\\" ]; do sleep 0.02; done; exec \\"$0\\"", "{{binary}}"]
timeout = 60
env = {{ KSWEEP_TEST_LOG = "DONE_LOG", START_LOG = "START_LOG_PATH", GO = "GO_PATH" }}
[check]
expected = {{ checksum = 1.0 }}
"""


class Cluster:
    """The docs' commands, each a process group of its own (a `dask worker` is its nanny and its worker)."""

    def __init__(self, folder):
        self.folder = folder
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str, env: dict | None = None) -> None:
        log = open(self.folder / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen([sys.executable, "-m", "dask", *args], env={**os.environ, **(env or {})},
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def worker(self, address: str, name: str, *args: str, env: dict | None = None) -> None:
        self.start(name, "worker", address, "--name", name, "--no-dashboard", "--death-timeout", "60",
                   "--local-directory", str(self.folder / name), *args, env=env)

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def close(self) -> None:
        for name in self.procs:
            self.kill(name)


def scheduler_address(path) -> str:
    """The address the scheduler writes into its scheduler file, once the file is whole."""
    deadline = time.monotonic() + 120
    while True:
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):  # not there yet, or half written
            assert time.monotonic() < deadline, f"the scheduler wrote no address into {path}"
            time.sleep(0.05)


@pytest.mark.slow
def test_the_docs_cluster_of_separate_processes_survives_a_lost_gpu_worker(program_dir):
    folder = program_dir.dir
    done, started, go = folder / "done.log", folder / "started.log", folder / "go"
    spec = program_dir(SPEC.replace("DONE_LOG", str(done)).replace("START_LOG_PATH", str(started))
                       .replace("GO_PATH", str(go)))
    cluster = Cluster(folder)
    killed: list[tuple[str, str]] = []
    try:
        cluster.start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                      "--scheduler-file", str(folder / "scheduler.json"))
        address = scheduler_address(folder / "scheduler.json")
        for i in (0, 1):  # one worker per GPU, each seeing only its GPU
            cluster.worker(address, f"gpu-{i}", "--nthreads", "1", "--resources", "GPU=1",
                           env={"CUDA_VISIBLE_DEVICES": str(i), "KSWEEP_GPU_NAME": "fake"})
        cluster.worker(address, "build-0", "--nthreads", "1")  # no GPU resource: builds go there
        with distributed.Client(address, timeout=120) as client:
            client.wait_for_workers(3, timeout=120)
            groups = {name: os.getpgid(proc.pid) for name, proc in cluster.procs.items()}

        def kill_the_first_run_s_gpu_worker():  # no run gets past its start until this is done
            deadline = time.monotonic() + 120
            try:
                while time.monotonic() < deadline:
                    lines = started.read_text().split("\n")[:-1] if started.exists() else []
                    if lines:
                        pid, shell, mode, x = lines[0].split()
                        name = next(n for n, g in groups.items() if g == os.getpgid(int(pid)))
                        cluster.kill(name)  # the nanny too: nothing restarts it, as on a lost host
                        killed.append((name, f"MODE={mode} X={x}"))
                        while time.monotonic() < deadline and alive(int(shell)):
                            time.sleep(0.01)  # its orphaned program is its reaper's to kill
                        return
                    time.sleep(0.01)
            finally:
                go.touch()

        killer = threading.Thread(target=kill_the_first_run_s_gpu_worker)
        killer.start()
        try:
            r = ksweep_cli("run", str(spec), "--cluster", address, "--shared-cache", str(folder / "shared"),
                           "--db", str(folder / "cluster.db"), "--strategy", "grid", "--no-confirm", "-q")
        finally:
            killer.join()
    finally:
        cluster.close()
    assert r.returncode == 0, r.stderr
    assert len(killed) == 1 and killed[0][0].startswith("gpu-")
    runs = {"MODE=10 X=1", "MODE=10 X=2", "MODE=10 X=3", "MODE=7 X=1", "MODE=7 X=2", "MODE=7 X=3"}
    starts = ["MODE={} X={}".format(*line.split()[2:]) for line in started.read_text().splitlines()]
    assert sorted(starts) == sorted([*runs, killed[0][1]])  # the killed run started again, no other
    assert sorted(done.read_text().splitlines()) == sorted(runs)  # each ran to its end once
    with sqlite3.connect(folder / "cluster.db") as db:
        assert db.execute("SELECT count(*) FROM history").fetchone()[0] == 9  # each stored once
    local = ksweep_cli("run", str(spec), "--db", str(folder / "local.db"), "--strategy", "grid", "--no-confirm", "-q")
    assert local.returncode == 0, local.stderr

    def outcomes(db):
        with Store(db) as store:
            return {tuple(sorted(r.params.items())): (r.status, dict(r.metrics)) for r in store.results()}

    remote = outcomes(folder / "cluster.db")
    assert remote == outcomes(folder / "local.db") and len(remote) == 9
    assert sorted(r.status.name for r in Store(folder / "cluster.db").results()) == \
        ["CHECKSUM_MISMATCH"] * 3 + ["COMPILE_ERROR"] * 3 + ["OK"] * 3
