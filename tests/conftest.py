import contextlib
import functools
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture
def program_dir(tmp_path):
    """A folder holding the test C program; returns a function that writes a spec there."""
    shutil.copy(PROGRAMS / "behaviours.c", tmp_path / "behaviours.c")

    def write(body: str, name: str = "sweep.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(body))
        return path

    write.dir = tmp_path
    return write


def ksweep_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """``ksweep ARGS`` run in this process, in folder ``cwd``: its exit status and what it
    printed, as ``subprocess.run([sys.executable, "-m", "ksweep.cli.main", *args],
    capture_output=True, text=True, cwd=cwd)`` gives them, without a Python start-up per
    command. For the tests of what a command says and stores; those of the process itself
    (a signal, a kill -9, what it leaves running) start one."""
    from ksweep.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    here, term = os.getcwd(), signal.getsignal(signal.SIGTERM)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors, --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(here)
        signal.signal(signal.SIGTERM, term)  # `ksweep run` sets its own
    return subprocess.CompletedProcess(["ksweep", *map(str, args)], code, _text(out), _text(err))


@contextlib.contextmanager
def ended_after(proc: subprocess.Popen, *, group: bool = False):
    """A program a test signals, killed if it still runs when the test ends (a failed
    assertion, a timeout): it must not run on beside the tests that follow. ``group``: its own
    process group (``start_new_session``), killed as a whole."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                if group:
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
            proc.communicate()


def _text(stream: io.StringIO) -> str:
    """What a pipe read in text mode gives (universal newlines: the CSV writer's \\r\\n is \\n)."""
    return stream.getvalue().replace("\r\n", "\n").replace("\r", "\n")


KERNELS = Path(__file__).parent / "kernels"


def vadd_kernel_spec(folder: Path, params: str, n: int, extra: str = "", *, name: str = "vadd",
                     grid: str = "cdiv(N, BLOCK * ELEMS)", block: str = "BLOCK",
                     reference: str = '"vadd_args.py:reference"', file: str = "k.toml") -> Path:
    """A kernel-mode spec of tests/kernels/vadd.cu, written with its files into ``folder``:
    ``params`` is the [params] table's body, ``n`` the shape's N, ``extra`` more [kernel] keys,
    ``file`` the spec's name (its database's too: specs of one folder share its build cache)."""
    for f in ("vadd.cu", "vadd_args.py"):
        shutil.copy(KERNELS / f, folder / f)
    path = folder / file
    path.write_text("\n".join([
        "[sweep]", 'arch = "sm_90a"', "[params]", params, "[shapes.s]", f"defines = {{ N = {n} }}", "[kernel]",
        'source = "vadd.cu"', f'name = "{name}"', f'grid = "{grid}"', f'block = "{block}"',
        'args = "vadd_args.py:make_args"', "outputs = [0]", f"reference = {reference}", extra, ""]))
    return path


@pytest.fixture(scope="session")
def dask_cluster():
    """(cluster, client): the one local Dask cluster of the test session, started when a test
    first asks for it: two fake-GPU workers (GPU=1, one thread, CUDA_VISIBLE_DEVICES 0 and 1,
    model "fake") and one build worker of one thread, all processes. A test that kills a
    worker waits for its nanny to bring it back."""
    distributed = pytest.importorskip("distributed")
    from ksweep.run.dask_executor import local_cluster
    from ksweep.run.gpus import Gpu

    import dask

    # it lives until the session ends, mostly idle, and its CPU is the other tests': its workers
    # run with local_cluster's settings for that (run/dask_executor.py's worker_config); its
    # scheduler and nannies run in this process, whose event-loop watch (every 20 ms) and memory
    # watch (every 100 ms) once a second halve what is left (1.4-1.6 to 0.7 CPU-seconds in 30 s
    # idle, bench/idle_cluster.py). Set for the rest of the session
    dask.config.set({"distributed.admin.tick.interval": "1s", "distributed.worker.memory.monitor-interval": "1s"})
    with warnings.catch_warnings():
        # another cluster on this host (another test session's) holds the port of the HTTP server: it takes another
        warnings.filterwarnings("ignore", "Port 8787 is already in use")
        cluster = local_cluster([Gpu(0, "fake"), Gpu(1, "fake")], build_workers=1, build_threads=1,
                                allowed_failures=3)
        client = distributed.Client(cluster)
        try:
            client.wait_for_workers(3, timeout=180)
        except BaseException:
            client.close()
            cluster.close()
            raise
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def every_status(tmp_path_factory):
    """tests/test_pipeline.py's ALL_MODES (a program that ends OK, hangs, crashes, fails,
    reports a CUDA error, prints no result or a wrong one, floods its output, does not
    compile) swept once by the local executor, a process per run, for the tests that only
    read it: (summary, results by MODE, the database, the spec's folder)."""
    from test_pipeline import ALL_MODES, sweep

    folder = tmp_path_factory.mktemp("every_status")
    shutil.copy(PROGRAMS / "behaviours.c", folder / "behaviours.c")
    path = folder / "sweep.toml"
    path.write_text(textwrap.dedent(ALL_MODES))
    summary, results, db = sweep(path, confirm=None)
    return summary, results, db, folder


GCC_BUILD = """
[build]
sources = ["behaviours.c"]
command = ["gcc", "-O0", "{defines}", "-o", "{binary}", "behaviours.c"]
timeout = 60
"""


def _has_gpu() -> bool:
    import subprocess

    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def pytest_collection_modifyitems(config, items):
    """The modules that hold a slow test run first, each whole and in its own order, so that
    with several workers (-n 2) their long tests do not end the session on one worker while
    the other has nothing left. The other modules' tests on the session's Dask cluster
    (``dask_cluster``) run among them: pytest-xdist hands each worker a first batch of
    consecutive tests (a quarter of its share), so one worker runs them all and starts the
    cluster, instead of each worker starting one of its own (its processes and their idle
    ticks until the session ends). Tests under tests/gpu/ need an NVIDIA GPU: skipped (and
    said so) without one."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow") is not None}
    # stable: the rest in order
    items.sort(key=lambda item: item.module.__name__ not in slow and "dask_cluster" not in item.fixturenames)
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU on this machine")
    for item in items:
        if "/tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@functools.cache
def _nvrtc_works() -> bool:
    try:
        from cuda.bindings import nvrtc as bindings

        return bindings.nvrtcVersion()[0] == bindings.nvrtcResult.NVRTC_SUCCESS
    except Exception:  # no cuda-python, or no libnvrtc it can load
        return False


# Asked when a marked test is about to run, not at collection: a run that selects none of them
# never loads libnvrtc.
needs_nvrtc = pytest.mark.needs_nvrtc


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_nvrtc: skipped without cuda-python and a loadable NVRTC")
    _ctrl_c_as_at_a_terminal()
    _bytecode_outside_the_sources()


def _bytecode_outside_the_sources() -> None:
    """With PYTHONDONTWRITEBYTECODE set (as on the project's machines), each of the several
    hundred Python processes the tests start (ksweep run, kernel-mode workers, the hardening
    of leaders, NVRTC builds) compiled ksweep's modules from their sources again: 10 to 15
    CPU-seconds of a run. Their bytecode goes instead to a folder of the temporary directory
    (PYTHONPYCACHEPREFIX), which this process and every one it starts read and write; still
    nothing is written beside the sources. Python checks a cached file against its source's
    size and time, as in __pycache__."""
    if not sys.dont_write_bytecode or sys.pycache_prefix:
        return
    folder = str(Path(tempfile.gettempdir()) / f"ksweep-tests-bytecode-{os.getuid()}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    sys.pycache_prefix = folder
    sys.dont_write_bytecode = False


def _ctrl_c_as_at_a_terminal() -> None:
    """Ctrl-C raises KeyboardInterrupt here and in every program the tests start, however the
    test run was started. A shell starts a background job (``cmd &`` in a script, as a CI job
    may be run) with SIGINT ignored; its children inherit that, and Python then installs no
    handler of its own: the tests of Ctrl-C interrupted nothing, and a sweep they had started
    ran on to its end."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_setup(item):
    if item.get_closest_marker("needs_nvrtc") is not None and not _nvrtc_works():
        pytest.skip("cuda-python with a loadable NVRTC is not installed")
