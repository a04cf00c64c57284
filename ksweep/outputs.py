"""Every file a command writes for the user (an export, a plot, a guarded source, a spec, a
profile's CSV) goes through here: checked before any work, then written at once.

``output_file`` says in one line, before the command does anything, why a path cannot be
written: a folder given for a file, a folder missing or not writable, an image name that is
not an image, an existing file without ``--force``. Some files are never written over,
whatever the flags: a ksweep database (any SQLite file), a ksweep spec, and the files the
command itself reads (the source ``guard`` or ``init`` reads, the database ``export`` reads,
the sources its spec builds).

``Output.write`` and ``Output.save_figure`` write a temporary file beside the target and
rename it over the target: a reader never sees half a file, and a command stopped part-way
leaves the old file as it was.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .errors import KsweepError

# what matplotlib's Agg, PDF, PS and SVG back ends write, by file name suffix
IMAGE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".eps", ".ps", ".svgz")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SPEC_TABLES = {"params", "build", "run", "kernel", "shapes", "check", "sweep"}


class OutputError(KsweepError):
    """An output path that cannot or must not be written."""


@dataclass(frozen=True)
class Output:
    """A checked output path: write it with ``write`` (text or bytes) or ``save_figure``."""

    path: Path
    option: str = "-o"

    def write(self, data: str | bytes) -> Path:
        """Write ``data`` (text as UTF-8) at once: a temporary file beside the target, renamed
        over it. An existing file keeps its permissions; a link is followed."""
        payload = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
        return self._replace(lambda f: f.write(payload))

    def save_figure(self, fig, **kwargs) -> Path:
        """Save a matplotlib figure in the format its name says, at once."""
        fmt = self.path.suffix.lower().lstrip(".")
        return self._replace(lambda f: fig.savefig(f, format=fmt, **kwargs))

    def _replace(self, fill) -> Path:
        target = self.path.resolve() if self.path.is_symlink() else self.path
        try:
            mode = target.stat().st_mode & 0o7777 if target.exists() else _new_file_mode()
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        except OSError as exc:
            raise OutputError(f"{self.option} {self.path}: cannot write it ({exc.strerror or exc})") from None
        try:
            with os.fdopen(fd, "wb") as f:
                fill(f)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException as exc:
            Path(tmp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise OutputError(f"{self.option} {self.path}: cannot write it ({exc.strerror or exc})") from None
            raise
        return self.path


def output_file(path: str | os.PathLike, *, option: str = "-o", force: bool = False,
                protect: Iterable[str | os.PathLike] = (), image: bool = False) -> Output:
    """``path`` checked as an output of the command whose option ``option`` names it; an
    OutputError (one line: the path, why, what to do) when it cannot or must not be
    written. ``force`` allows replacing an existing file (never a database, a spec or a file
    in ``protect``: what the command reads); ``image``: the name must say an image format."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError(f"{option}: give a file name")
    path = Path(text)
    said = f"{option} {text}"
    if path.is_dir():
        example = f"{text.rstrip('/')}/{'plot.png' if image else 'NAME'}"
        raise OutputError(f"{said}: is a folder; give a file name in it ({example})")
    if image and path.suffix.lower() not in IMAGE_SUFFIXES:
        raise OutputError(f"{said}: not an image file name; end it with .png, .svg or .pdf "
                          f"(or {', '.join(IMAGE_SUFFIXES[3:])})")
    folder = path.parent
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise OutputError(f"{said}: the folder {folder} {why}; make it (mkdir -p {folder}) or give another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{said}: cannot write in the folder {folder} (permission denied); give a path in a "
                          "folder you can write")
    if path.exists():
        _check_replaceable(path, said, force, [Path(p) for p in protect])
    return Output(path, option)


def _check_replaceable(path: Path, said: str, force: bool, protect: list[Path]) -> None:
    for p in protect:
        if _same_file(path, p):
            also = "" if _same_name(path, p) else f" (as {p})"
            raise OutputError(f"{said}: this command reads that file{also}; it is never written over, even with "
                              "--force (give another file name)")
    kind = _never_replaced(path)
    if kind:
        raise OutputError(f"{said}: is {kind}; ksweep never writes over one, even with --force "
                          "(give another file name)")
    if not force:
        raise OutputError(f"{said}: the file exists; give --force to replace it, or another file name")
    if not os.access(path, os.W_OK):
        raise OutputError(f"{said}: the file is read-only; give another file name")


def _never_replaced(path: Path) -> str | None:
    """What kind of file ``path`` is when ksweep must never write over it: a database or a
    spec; None otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError:
        return None
    if head == _SQLITE_MAGIC:
        return "a SQLite database (ksweep's results are kept in one)"
    if path.suffix.lower() == ".toml":
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return None
        if "params" in table and _SPEC_TABLES & (set(table) - {"params"}):
            return "a ksweep spec"
    return None


def writable_folder(folder: str | os.PathLike, *, why: str, fix: str) -> Path:
    """``folder`` when it can be written, or made where its nearest existing parent can be
    written; else an OutputError: the folder, why the command writes there (``why``) and
    what to do (``fix``)."""
    folder = Path(folder)
    nearest = folder
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise OutputError(f"{nearest} is not a folder: {why}; {fix}")
    if not os.access(nearest, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write in {nearest} (permission denied): {why}; {fix}")
    return folder


def save_figure(fig, out: Output | str | os.PathLike, **kwargs) -> Path:
    """Save a matplotlib figure to ``out``: a checked Output, or a path (an image name; an
    existing image replaced, never a database or a spec), written at once."""
    if not isinstance(out, Output):
        out = output_file(out, option="--out", force=True, image=True)
    return out.save_figure(fig, **kwargs)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _same_name(a: Path, b: Path) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def _new_file_mode() -> int:
    """The mode a new file gets from open(): 0o666 less the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
