"""NVRTC as a compiler command: ``python -m ksweep.build.nvrtc``.

Kernel mode builds with nvcc by default; ``[kernel] compiler = "nvrtc"`` builds through
NVIDIA's runtime compiler instead (cuda-python's ``cuda.bindings.nvrtc``), as Kernel Tuner
does, since the two can give kernels of different speed. Run as a command, it fits the
build path unchanged: its argv is data, keyed by the build cache (with ``--version``, the
NVRTC and cuda-bindings versions and the CUDA header folder, as the compiler's identity),
and it prints NVRTC's log, which carries ptxas's ``-v`` report, to stderr, where
build/ptxas.py reads registers, spills and shared memory as for nvcc::

    python -m ksweep.build.nvrtc --gpu-architecture=sm_90a --ptxas-options=-v \\
        [-DNAME=V ...] [-I DIR ...] [--name-expression=EXPR ...] [NVRTC options] -o OUT.cubin SOURCE.cu

``--gpu-architecture=sm_XX`` (a real architecture) makes NVRTC emit a cubin. Every
option but ``-o``, ``--name-expression``, ``--version`` and ``-MMD -MF FILE`` (the headers the
source includes with quotes, written by this command: NVRTC lists none) goes to NVRTC as given (``-I
DIR``/``-D NAME`` in two words are joined). ``--name-expression`` instantiates a template
kernel (``&sgemm<64, 64>``), which host code cannot do here: NVRTC compiles device code
only. The CUDA headers (``<cuda_fp16.h>`` …) are found by cuda-pathfinder (the NVIDIA
wheels, ``CUDA_PATH``/``CUDA_HOME``, the toolkit of the system). Exit status 0 with the
cubin written, 1 on a compile error (NVRTC's log on stderr), 2 on a usage error.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..spec.collisions import read_sources

MODULE = "ksweep.build.nvrtc"
_JOINED = ("-I", "-D", "-U")  # options NVRTC takes in one word: "-IDIR", "-DX=1"
_PRE_INCLUDE = ("-include", "--pre-include")  # nvcc's and NVRTC's: a header read before the source


def command() -> list[str]:
    """The argv prefix that runs this module with the Python running ksweep."""
    return [sys.executable, "-m", MODULE]


def is_command(argv: Sequence[str]) -> bool:
    """Whether a build argv compiles through this module."""
    return len(argv) >= 3 and argv[1] == "-m" and argv[2] == MODULE


def cuda_include() -> str | None:
    """The folder of the CUDA runtime's headers, or None when none is installed."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:  # an older cuda-python: the toolkit's folder by its variables only
        home = os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME")
        folder = os.path.join(home, "include") if home else None
        return folder if folder and os.path.isfile(os.path.join(folder, "cuda_runtime.h")) else None
    return find_nvidia_header_directory("cudart")


@dataclass
class Args:
    source: str
    output: str
    options: list[str]  # for NVRTC
    names: list[str]  # name expressions
    depfile: str | None = None


def parse_args(argv: Sequence[str]) -> Args:
    """The command's arguments; ValueError on a usage error."""
    source = output = depfile = None
    options: list[str] = []
    names: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg == "-o":
            output = next(it, None)
        elif arg in ("-MMD", "-MD"):  # NVRTC writes no dependencies: this command does (write_depfile)
            continue
        elif arg == "-MF":
            depfile = next(it, None)
        elif arg == "--name-expression":
            names.append(next(it, ""))
        elif arg.startswith("--name-expression="):
            names.append(arg.split("=", 1)[1])
        elif arg in _PRE_INCLUDE:
            value = next(it, None)
            if value is None:
                raise ValueError(f"{arg} needs a value")
            options.append(f"--pre-include={value}")
        elif arg.startswith(("-include=", "--pre-include=")):
            options.append("--pre-include=" + arg.split("=", 1)[1])
        elif arg in _JOINED:
            value = next(it, None)
            if value is None:
                raise ValueError(f"{arg} needs a value")
            options.append(arg + value)
        elif arg.startswith("-"):
            options.append(arg)
        elif source is None:
            source = arg
        else:
            raise ValueError(f"one source file only, got {source!r} and {arg!r}")
    if source is None or not output:
        raise ValueError("usage: python -m ksweep.build.nvrtc [NVRTC options] -o OUT.cubin SOURCE.cu")
    if not any(o.startswith(("--gpu-architecture=sm_", "-arch=sm_")) for o in options):
        raise ValueError("give a real architecture, e.g. --gpu-architecture=sm_90a (NVRTC then emits a cubin)")
    if any(not n for n in names):
        raise ValueError("--name-expression needs an expression, e.g. '&sgemm<64, 64>'")
    return Args(source, output, options, names, depfile)


def write_depfile(path: str, args: Args) -> None:
    """A Make-style list of the files the build reads: the source and the headers it includes
    with quotes, transitively (beside the including file or in a -I folder), as nvcc's -MMD
    lists them, so that an edited header rebuilds (build/deps.py)."""
    dirs = [o[2:] for o in args.options if o.startswith("-I")]
    dirs += [o.split("=", 1)[1] for o in args.options if o.startswith("--include-path=")]
    dirs = [os.path.abspath(d) for d in dirs]
    files = read_sources(Path.cwd(), [args.source], dirs)
    for o in args.options:  # a pre-included header (and what it includes), found as NVRTC finds it
        if o.startswith("--pre-include="):
            name = o.split("=", 1)[1]
            found = next((Path(d) / name for d in [str(Path(args.source).resolve().parent), *dirs]
                          if (Path(d) / name).is_file()), None)
            if found is not None:
                files = {**files, **read_sources(found.parent, [found.name], dirs)}
    names = " ".join(str(f).replace(" ", "\\ ") for f in files)
    Path(path).write_text(f"{args.output}: {names}\n")


def version() -> str:
    """The identity of this compiler: NVRTC's version, cuda-bindings', the CUDA headers used."""
    from importlib.metadata import PackageNotFoundError, version as dist_version

    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    try:
        bindings = dist_version("cuda-bindings")
    except PackageNotFoundError:
        bindings = "unknown"
    return f"ksweep nvrtc: NVRTC {major}.{minor}, cuda-bindings {bindings}, CUDA headers {cuda_include()}"


def compile_cubin(source: str, options: Sequence[str], names: Sequence[str] = ()) -> tuple[bytes | None, str]:
    """(the cubin, NVRTC's log) of ``source`` (a path); the cubin is None on a compile error."""
    with open(source, "rb") as f:
        text = f.read()
    return compile_program(text, os.path.abspath(source), options, names)


def compile_program(text: bytes, name: str, options: Sequence[str], names: Sequence[str] = (),
                    ptx: bool = False) -> tuple[bytes | None, str]:
    """(the cubin, or the PTX when ``ptx``; NVRTC's log) of the CUDA source ``text``, called
    ``name`` in messages; the image is None on a compile error."""
    from cuda.bindings import nvrtc

    check = _checker(nvrtc)
    prog = check(nvrtc.nvrtcCreateProgram(text, name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        for expr in names:
            check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), f"nvrtcAddNameExpression({expr})")
        include = cuda_include()
        opts = [o.encode() for o in options] + ([f"--include-path={include}".encode()] if include else [])
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        buf = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
        log = buf.rstrip(b"\0 \n").decode(errors="replace")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            if include is None and "could not open source file" in log:
                log += ("\nerror: the CUDA headers were not found: install the CUDA toolkit (or set CUDA_HOME), "
                        "or pip install nvidia-cuda-runtime")
            return None, log or nvrtc.nvrtcGetErrorString(err)[1].decode()
        get_size, get = (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if ptx else \
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        size = check(get_size(prog), get_size.__name__)
        image = b" " * size
        check(get(prog, image), get.__name__)
        return image, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def supported_archs() -> list[int]:
    """The architectures this NVRTC compiles for, as numbers (90 for sm_90)."""
    from cuda.bindings import nvrtc

    return [int(a) for a in _checker(nvrtc)(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")]


def _checker(nvrtc):
    def check(result, what: str):
        err, *rest = result
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{what}: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")
        return rest[0] if len(rest) == 1 else rest
    return check


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv == ["--version"]:
            print(version())
            return 0
        args = parse_args(argv)
    except ValueError as exc:
        print(f"ksweep nvrtc: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"ksweep nvrtc: error: NVRTC needs cuda-python ({exc}): pip install 'ksweep[gpu]'", file=sys.stderr)
        return 2
    try:
        cubin, log = compile_cubin(args.source, args.options, args.names)
    except ImportError as exc:
        print(f"ksweep nvrtc: error: NVRTC needs cuda-python ({exc}): pip install 'ksweep[gpu]'", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:  # no libnvrtc, an unreadable source, an NVRTC call failing
        print(f"ksweep nvrtc: error: {exc}", file=sys.stderr)
        return 1
    if log:
        print(log, file=sys.stderr)
    if cubin is None:
        return 1
    tmp = f"{args.output}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(cubin)
    os.replace(tmp, args.output)
    if args.depfile:
        write_depfile(args.depfile, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
