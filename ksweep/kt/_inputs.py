"""What ``ksweep.kt.tune_kernel`` checks of its inputs before anything is built or written:
the kernel's source (a file or code, readable UTF-8 text that names the kernel), its
arguments, ``iterations``, ``block_size_names`` and the cache's folder. A bad one is one
``KtUnsupported`` line naming the keyword, as the keywords ksweep cannot honour are."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from ._keywords import DEFAULT_BLOCK_SIZE_NAMES, KtUnsupported, whole_number

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_NUMERIC = "biufc"  # numpy's kinds of numbers: bool, signed, unsigned, float, complex


def checked_iterations(iterations) -> int:
    if not whole_number(iterations) or iterations < 1:
        raise KtUnsupported(f"iterations {iterations!r}: give a whole number of at least 1")
    return int(iterations)


def checked_block_size_names(names) -> list[str]:
    """The three block size names: those given (up to 3), then Kernel Tuner's defaults."""
    if names is None:
        return list(DEFAULT_BLOCK_SIZE_NAMES)
    given = list(names) if isinstance(names, (list, tuple)) else None
    if (not given or len(given) > 3 or not all(isinstance(n, str) and n.isidentifier() for n in given)
            or len(set(given)) != len(given)):
        raise KtUnsupported(f"block_size_names {names!r}: give a list of 1 to 3 distinct names, e.g. "
                            "['block_size_x', 'block_size_y']")
    return given + list(DEFAULT_BLOCK_SIZE_NAMES[len(given):])


def checked_arguments(arguments) -> list:
    """The kernel's arguments: numpy arrays and scalars of numbers (a Python int, float or
    bool is taken as an int32, float32 or int32)."""
    if not isinstance(arguments, (list, tuple)):
        raise KtUnsupported(f"arguments: give a list of the kernel's arguments (numpy arrays and scalars), not "
                            f"a {type(arguments).__name__}")
    for i, a in enumerate(arguments):
        if isinstance(a, (np.ndarray, np.generic)):
            if a.dtype.kind not in _NUMERIC:
                raise KtUnsupported(f"arguments[{i}]: a numpy {'array' if isinstance(a, np.ndarray) else 'scalar'} "
                                    f"of dtype {a.dtype}: give numbers")
        elif not isinstance(a, (int, float)):
            raise KtUnsupported(f"arguments[{i}] is a {type(a).__name__}: give a numpy array or a numpy scalar, "
                                "e.g. np.int32(n)")
    return list(arguments)


def checked_cache(cache) -> Path | None:
    """The cache's file as given (None without one); its folder must exist and be writable
    (the results database is written beside it)."""
    if cache is None or cache == "":
        return None
    if not isinstance(cache, (str, os.PathLike)):
        raise KtUnsupported(f"cache {cache!r}: give a file name")
    path = Path(cache)
    folder = path.parent
    if path.is_dir():
        raise KtUnsupported(f"cache '{cache}' is a folder: give a file name, e.g. '{path / 'cache.json'}'")
    if not folder.is_dir():
        raise KtUnsupported(f"cache '{cache}': its folder {folder} does not exist: make it, or give a cache in "
                            "another folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise KtUnsupported(f"cache '{cache}': its folder {folder} is not writable: give a cache in a folder you "
                            "can write")
    return path


def source_text(kernel_source) -> tuple[Path | None, str]:
    """(the file, its text) of a kernel source given as a file name, or (None, the code): a
    folder, a file that is not UTF-8 and an empty source are refused."""
    if isinstance(kernel_source, (list, tuple)):
        if len(kernel_source) != 1:
            raise KtUnsupported("kernel_source as several files: give the kernel's file (it may #include the others)")
        kernel_source = kernel_source[0]
    if not isinstance(kernel_source, (str, Path)):
        raise KtUnsupported(f"kernel_source: give a file name or the code as a string, not a "
                            f"{type(kernel_source).__name__}")
    if isinstance(kernel_source, str) and not kernel_source.strip():
        raise KtUnsupported("kernel_source is empty: give the kernel's file or its code")
    code = isinstance(kernel_source, str) and "\n" in kernel_source
    if not code and Path(kernel_source).is_dir():
        raise KtUnsupported(f"kernel_source '{kernel_source}' is a folder: give the kernel's file")
    if isinstance(kernel_source, Path) or (not code and Path(kernel_source).is_file()):
        path = Path(kernel_source)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise KtUnsupported(f"kernel_source '{kernel_source}': cannot read it: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KtUnsupported(f"kernel_source '{kernel_source}' is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                f"at offset {exc.start}): save it as UTF-8") from None
        if not text.strip():
            raise KtUnsupported(f"kernel_source '{kernel_source}' is empty: give the file that defines the kernel")
        return path.resolve(), text
    if not code and kernel_source.endswith((".cu", ".cuh", ".h")):
        raise KtUnsupported(f"kernel_source '{kernel_source}' does not exist")
    return None, kernel_source


def include_dirs(flags) -> list[str]:
    """The ``-I`` folders of compiler options (nvcc's ``-I dir``, ``-Idir``; NVRTC's
    ``--include-path=dir``)."""
    from ..spec.collisions import include_args

    return [d for _, _, d in include_args(list(flags))] + \
        [f.split("=", 1)[1] for f in flags if f.startswith("--include-path=")]


def check_names_kernel(kernel_name, file: Path | None, text: str, folders=()) -> None:
    """The kernel's name occurs in its source, or in a header the source includes with quotes
    (found beside it, or in an ``-I`` folder of the compiler options)."""
    if not isinstance(kernel_name, str) or not kernel_name.split("<")[0].strip():
        raise KtUnsupported(f"kernel_name {kernel_name!r}: give the kernel's name")
    name = kernel_name.split("<")[0].strip().split("::")[-1]
    found = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    if found.search(text):
        return
    from ..spec.collisions import read_sources

    folder = file.parent if file is not None else Path.cwd()
    dirs = [Path(d).resolve() for d in folders]
    included = [next((str(base / h) for base in (folder, *dirs) if (base / h).is_file()), h)
                for h in _INCLUDE.findall(text)]
    headers = read_sources(folder, included, [str(d) for d in dirs])
    if any(found.search(t) for t in headers.values()):
        return
    where = f"'{file}'" if file is not None else "the code given as kernel_source"
    raise KtUnsupported(f"kernel_name '{kernel_name}': {where} does not name {name}"
                        + (" (nor do the headers it includes)" if headers else "")
                        + ": give the name of a __global__ function it defines")
