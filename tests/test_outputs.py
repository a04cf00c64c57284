"""No command destroys data: every file a command writes goes through one checked path
(ksweep/outputs.py) — never over a database, a spec or what the command reads, an existing
file only with --force, written at once — and a stopped `guard --check` leaves no copies."""

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ksweep.cli.main import main
from ksweep.errors import KsweepError
from ksweep.outputs import output_file

from test_damaged_store import filled
from test_driver import toy

ROOT = Path(__file__).parent.parent
SOURCE = "#ifndef A\n#define A 1\n#endif\n#define B 2\nint main(void) { return A + B; }\n"


def digests(folder: Path) -> dict:
    return {p.relative_to(folder): hashlib.md5(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path):
    """A folder holding a spec, the source it builds, its database and another database."""
    spec = toy(tmp_path, a=(1, 2), b=(1,))
    (tmp_path / "toy.c").write_text(SOURCE)
    db = filled(tmp_path / "toy.db", spec.path, n=2)
    other = filled(tmp_path / "other.db", spec.path, n=2)
    (tmp_path / "old.h").write_text("// an older export\n")
    (tmp_path / "adir").mkdir()
    return tmp_path, spec.path, db, other


def said(capsys, argv) -> tuple[int, list[str]]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, [line for line in err.splitlines() if line.strip() and not line.startswith("ksweep: warning")]


@pytest.mark.parametrize("argv", [
    ["export", "{db}", "--format", "header", "-o", "{out}.h"],
    ["init", "{folder}/toy.c", "-o", "{out}.toml"],
    ["guard", "{folder}/toy.c", "-o", "{out}.c"],
    ["plot", "convergence", "{db}", "--out", "{out}.png"],
    ["history", "{db}", "--plot", "{out}.svg"],
], ids=["export", "init", "guard", "plot", "history"])
def test_an_existing_output_is_replaced_only_with_force(work, capsys, argv):
    folder, spec, db, _ = work
    argv = [a.format(db=db, folder=folder, out=folder / "made") for a in argv]
    made = Path(argv[argv.index("-o" if "-o" in argv else "--out" if "--out" in argv else "--plot") + 1])
    assert said(capsys, argv)[0] == 0 and made.is_file()
    made.write_bytes(b"mine\n")
    code, lines = said(capsys, argv)
    assert code == 2 and "exists; give --force" in lines[0] and made.read_bytes() == b"mine\n"
    assert said(capsys, [*argv, "--force"])[0] == 0 and made.read_bytes() != b"mine\n"
    assert not [p for p in folder.iterdir() if p.name.startswith(".made")]  # no temporary left


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "tuned.h"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    out = output_file(target, force=True)

    class Broken:
        def savefig(self, f, **kw):
            f.write(b"half of an image")
            raise RuntimeError("drawing failed")

    with pytest.raises(RuntimeError):
        output_file(tmp_path / "p.png", image=True).save_figure(Broken())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tuned.h"]
    out.write("new\n")
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == 0o640  # its permissions kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tuned.h"]


def test_a_link_is_followed_and_a_new_file_gets_the_usual_permissions(tmp_path):
    real = tmp_path / "real.h"
    real.write_text("old\n")
    (tmp_path / "link.h").symlink_to(real)
    output_file(tmp_path / "link.h", force=True).write("new\n")
    assert (tmp_path / "link.h").is_symlink() and real.read_text() == "new\n"
    umask = os.umask(0o022)
    try:
        output_file(tmp_path / "fresh.h").write("x\n")
    finally:
        os.umask(umask)
    assert (tmp_path / "fresh.h").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


def test_an_empty_output_name_is_refused():
    with pytest.raises(KsweepError, match="give a file name"):
        output_file("")


# -- guard --check stopped part-way ---------------------------------------------------------

def _copies(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".k.ksweep-"))


def _guard_that_hangs(folder: Path, marker: str) -> subprocess.Popen:
    """`ksweep guard k.c --in-place --check` whose build command never ends."""
    (folder / "k.c").write_text(SOURCE)
    argv = [sys.executable, "-m", "ksweep.cli.main", "guard", "k.c", "--in-place", "--check", "--",
            "sh", "-c", "exec sleep 600", marker, "k.c", "-o", "k.o"]
    # its temporary folder in the test's: the one a kill -9 leaves is not left in the machine's
    (folder / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TMPDIR": str(folder / "tmp")}
    return subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_copies(folder: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120  # a condition awaited, not a time raced
    while len(_copies(folder)) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the check never made its two copies"
        time.sleep(0.02)


@pytest.fixture
def marker():
    token = f"ksweep-test-{uuid.uuid4().hex[:12]}"
    yield token
    subprocess.run(["pkill", "-f", token], check=False)


def test_a_guard_check_stopped_by_sigterm_removes_its_copies(tmp_path, marker):
    proc = _guard_that_hangs(tmp_path, marker)
    _wait_for_copies(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert _copies(tmp_path) == [] and (tmp_path / "k.c").read_text() == SOURCE


def test_a_stop_just_after_a_copy_is_made_still_removes_it(tmp_path, marker, monkeypatch):
    """SIGTERM landing as the temporary copy comes into being, before the check could list it
    (the moment a loaded machine once hit: the copy was left beside the source): the check
    stops and no copy is left. Here the stop is raised from inside the making of the second
    copy, right after the file is there."""
    from ksweep.source import codecheck

    made = []
    real = os.open

    def made_then_stopped(file, flags, *args, **kwargs):
        fd = real(file, flags, *args, **kwargs)
        if flags & os.O_EXCL:
            made.append(file)
            if len(made) == 2:
                os.close(fd)
                raise KeyboardInterrupt  # as SIGTERM's handler in `ksweep guard` does
        return fd

    monkeypatch.setattr(codecheck.os, "open", made_then_stopped)
    (tmp_path / "k.c").write_text(SOURCE)
    with pytest.raises(KeyboardInterrupt):
        codecheck.check(tmp_path / "k.c", SOURCE, SOURCE, ["sh", "-c", "exec sleep 600", marker, "k.c", "-o", "k.o"],
                        cwd=tmp_path)
    assert len(made) == 2 and _copies(tmp_path) == []


def test_a_stop_while_the_builds_are_handed_out_stops_the_one_started(tmp_path, marker, monkeypatch):
    """SIGTERM (here: KeyboardInterrupt) landing after the first build started and before the
    second was handed out: the first is killed and the check ends, its copies removed (it
    used to wait for that build to end: a hang under load)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from ksweep import process
    from ksweep.source import codecheck

    class StoppedOnTheSecond(ThreadPoolExecutor):
        def submit(self, *args, **kwargs):
            if getattr(self, "handed", 0) == 1:
                raise KeyboardInterrupt
            self.handed = getattr(self, "handed", 0) + 1
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(process, "ThreadPoolExecutor", StoppedOnTheSecond)  # the builds' pool (process.at_once)
    (tmp_path / "k.c").write_text(SOURCE)
    said = []

    def check():
        try:
            codecheck.check(tmp_path / "k.c", SOURCE, SOURCE, ["sh", "-c", "exec sleep 600", marker, "k.c", "-o", "k.o"],
                            cwd=tmp_path)
        except KeyboardInterrupt:
            said.append("stopped")

    thread = threading.Thread(target=check, daemon=True)
    thread.start()
    thread.join(120)  # a bound on a hang, not a time raced
    assert not thread.is_alive(), "the check waited for the build it had started"
    assert said == ["stopped"] and _copies(tmp_path) == []


def test_the_copies_of_a_killed_guard_check_are_removed_by_the_next_check(tmp_path, marker):
    proc = _guard_that_hangs(tmp_path, marker)
    _wait_for_copies(tmp_path, proc)
    proc.kill()  # SIGKILL: nothing of ksweep runs after it
    proc.communicate(timeout=120)
    left = _copies(tmp_path)
    assert len(left) == 2
    # another process's copy (alive: this test's own pid) is left alone
    mine = tmp_path / f".k.ksweep-{os.getpid()}-abc.c"
    mine.write_text("a copy of a check still running\n")
    code = main(["guard", str(tmp_path / "k.c"), "--check", "--", "sh", "-c", "cp \"$1\" \"$3\"", "sh",
                 str(tmp_path / "k.c"), "-o", str(tmp_path / "k.o")])
    assert code in (0, 1)
    assert _copies(tmp_path) == [mine.name]
