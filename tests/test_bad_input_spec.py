"""Bad input in a spec: one line naming the file and the fix, exit 2, in under 2 s; never a
traceback, a hang or silent acceptance (issue 12, item 10)."""

import time

import pytest

from ksweep.cli.main import main
from ksweep.errors import SpecError
from ksweep.spec.load import load_spec


def cli(capsys, *argv):
    start = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - start
    out, err = capsys.readouterr()
    return code, out, err, elapsed


def refused(capsys, path, fragment, *extra):
    """`ksweep plan PATH` fails with one line, naming the file, that holds fragment."""
    code, _, err, elapsed = cli(capsys, "plan", str(path), *extra)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"ksweep: error: {path.name}: "), lines[0]
    assert fragment in lines[0], lines[0]
    assert elapsed < 2.0
    return lines[0]


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- 1. the file itself -----------------------------------------------------------------


def test_a_spec_that_is_not_utf8(tmp_path, capsys):
    path = tmp_path / "spec.toml"
    path.write_bytes('[params]\n# caf\u00e9\nA = [1]\n'.encode("latin-1"))
    line = refused(capsys, path, "not UTF-8 text (byte 0xe9 on line 2)")
    assert "save the spec as UTF-8" in line


def test_a_utf8_spec_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_bytes("\ufeff[params]\nA = [1, 2]\n".encode("utf-8"))
    assert load_spec(path).plan().valid == 2


@pytest.mark.parametrize("text", ["", "\n  \n", "# only a comment\n"])
def test_an_empty_spec(tmp_path, capsys, text):
    line = refused(capsys, write(tmp_path, text), "a spec needs at least a [params] table")
    assert "empty" in line or "no tables" in line


def test_a_folder_instead_of_a_spec(tmp_path, capsys):
    code, _, err, _ = cli(capsys, "plan", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is a folder" in err
