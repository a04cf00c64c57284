import shutil
import textwrap
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
    """Tests under tests/gpu/ need an NVIDIA GPU: skipped (and said so) without one."""
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU on this machine")
    for item in items:
        if "/tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
