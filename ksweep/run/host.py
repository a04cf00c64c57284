"""The persistent host of program mode (``[run] persistent = true``, ``--persistent``).

One host process per GPU loads each config's build (a shared library whose ``main`` was
renamed ``ksweep_main`` at compile time), calls it with the run command's arguments, and
unloads it. The process start, ``cuInit``, the CUDA context and libraries such as cuBLAS
are paid once per GPU instead of once per config; the host holds the GPU's primary
context itself, so it outlives each config's CUDA runtime.

What isolation remains: the program's stdout and stderr go to the paths each request
names (named pipes the client drains and caps, as it would a process's pipes); a program that exits, crashes or hangs takes only the host down (the client
classifies the run as a process's, and starts a new host); after every run the host
synchronises the context, and a context left broken by the program's kernels ends the
host too. Libraries the programs load stay loaded (pinned), so the next config does not
load them again. A program that dlclose cannot unload (g++ makes inline statics unique
symbols, which pin their library) is reported "sticky", and the next run gets a new host:
runs of the same file (a harness) must not see the previous run's statics.

Protocol: JSON lines on the stdin and stdout the host was started with, both moved to
private descriptors (a program sees /dev/null as stdin, as in program mode).
    hello   {"ok": true, "hello": "<GPU name or 'no CUDA driver'>", "pid": N}
    request {"op": "run", "lib": path, "argv": [...], "cwd": dir, "env": {...},
             "stdout": path, "stderr": path}
    answer  {"ok": true, "rc": exit code, "seconds": s, "fatal": bool, "message": str, "sticky": bool}
    request {"op": "exit"}
"""

from __future__ import annotations

import _ctypes
import ctypes
import json
import os
import sys
import time

# ksweep_main as C, then as C++ (main(int, char**) and main()) names it
ENTRY_POINTS = (("ksweep_main", True), ("_Z11ksweep_mainiPPc", True), ("_Z11ksweep_mainv", False))
RTLD_NOLOAD = getattr(os, "RTLD_NOLOAD", 0x4)
RTLD_NODELETE = getattr(os, "RTLD_NODELETE", 0x1000)


class Context:
    """The host's own reference to the GPU's primary context (libcuda through ctypes); empty
    where there is no driver (a host running CPU programs)."""

    def __init__(self):
        self.lib = None
        self.ctx = ctypes.c_void_p()
        self.name = "no CUDA driver"
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return
        dev = ctypes.c_int()
        if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(dev), 0) != 0:
            self.name = "no CUDA device"
            return
        if lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev) != 0:
            self.name = "CUDA context failed"
            return
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, dev)
        self.lib, self.name = lib, name.value.decode(errors="replace")

    def broken(self) -> str | None:
        """Why the context is unusable after the last program (a sticky error), or None."""
        if self.lib is None:
            return None
        self.lib.cuCtxPushCurrent_v2(self.ctx)
        code = self.lib.cuCtxSynchronize()
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        if code == 0:
            return None
        text = ctypes.c_char_p()
        self.lib.cuGetErrorName(code, ctypes.byref(text))
        return f"the CUDA context is broken after the run ({(text.value or b'?').decode()})"


def _pin_loaded_libraries(pinned: set[str], skip: str) -> None:
    """Keep every shared library loaded so far (cuBLAS, the C++ runtime...) for the next
    configs: RTLD_NODELETE on an already loaded library makes dlclose leave it."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5 and "/" in line}
    except OSError:
        return
    for path in paths - pinned:
        if path != skip and ".so" in os.path.basename(path):
            try:
                ctypes.CDLL(path, mode=RTLD_NOLOAD | RTLD_NODELETE | os.RTLD_LAZY)
            except OSError:
                pass
        pinned.add(path)


class _CxxStreams:
    """libstdc++'s std::cout and std::clog, if loaded. A program that called
    sync_with_stdio(false) makes them buffer on their own, flushed only at the host's exit:
    the host flushes them after every run instead, as a process's exit would."""

    def __init__(self):
        self.flush = None
        self.streams: list[int] = []

    def _find(self) -> bool:
        try:
            lib = ctypes.CDLL("libstdc++.so.6", mode=RTLD_NOLOAD | os.RTLD_LAZY)
            flush = lib._ZNSo5flushEv  # std::ostream::flush()
            streams = [ctypes.addressof(ctypes.c_char.in_dll(lib, name)) for name in ("_ZSt4cout", "_ZSt4clog")]
        except (OSError, AttributeError, ValueError):
            return False
        flush.argtypes, flush.restype = [ctypes.c_void_p], ctypes.c_void_p
        self.flush, self.streams = flush, streams
        return True

    def flush_all(self) -> None:
        if self.flush is None and not self._find():
            return
        for stream in self.streams:
            if ctypes.c_void_p.from_address(stream).value:  # constructed (its vtable is set)
                self.flush(stream)


def _still_loaded(path: str) -> bool:
    """Whether dlclose left the program loaded (e.g. g++'s STB_GNU_UNIQUE symbols of inline
    statics): its statics would carry over to the next run of the same file (a harness)."""
    try:
        lib = ctypes.CDLL(path, mode=RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return False
    _ctypes.dlclose(lib._handle)  # the reference RTLD_NOLOAD took
    return True


PR_SET_CHILD_SUBREAPER = 36


def _kill_leftovers() -> None:
    """Kill every other process of this host's process group and every descendant of the
    host (children a program started and left running, daemons that left the group with
    setsid included), and reap them. The host is a subreaper, so orphans stay its
    descendants, and without children of its own it has no descendants at all: the
    common case costs one waitpid."""
    try:
        os.waitpid(-1, os.WNOHANG)  # raises when the host has no child at all
    except ChildProcessError:
        return
    me, group = os.getpid(), os.getpgrp()
    killed: set[int] = set()
    for _ in range(50):  # again while a scan finds new ones: one may fork while another is killed
        victims = [pid for pid in _leftovers(me, group) if pid not in killed]
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
            killed.add(pid)
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _leftovers(me: int, group: int) -> list[int]:
    """The live processes of ``group`` and the descendants of ``me`` (but me), from /proc."""
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return []
    parents, chosen = {}, set()
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        try:
            state, ppid, pgrp = fields[0], int(fields[1]), int(fields[2])  # fields 3-5 of stat
        except (ValueError, IndexError):
            continue
        if state in ("Z", "X"):  # dead already, waiting to be reaped
            continue
        parents[pid] = ppid
        if pgrp == group:
            chosen.add(pid)
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    below: set[int] = set()
    stack = [me]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in below:
                below.add(child)
                stack.append(child)
    return sorted(chosen | below)


def _entry(lib: ctypes.CDLL):
    for name, with_args in ENTRY_POINTS:
        try:
            fn = getattr(lib, name)
        except AttributeError:
            continue
        fn.restype = ctypes.c_int
        return fn, with_args
    return None, False


class Host:
    def __init__(self, reply_fd: int):
        self.reply = os.fdopen(reply_fd, "w", buffering=1)
        self.libc = ctypes.CDLL(None)
        if sys.platform.startswith("linux"):  # orphans of a program's children become ours to find
            self.libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.context = Context()
        self.cxx = _CxxStreams()
        self.pinned: set[str] = set()
        self.devnull = os.open(os.devnull, os.O_WRONLY)
        self.stderr = os.dup(2)

    def send(self, message: dict) -> None:
        self.reply.write(json.dumps(message) + "\n")

    def run(self, req: dict) -> dict:
        saved_env = dict(os.environ)
        os.environ.update(req.get("env", {}))
        os.chdir(req["cwd"])
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.libc.fflush(None)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(out)
        os.close(err)
        lib, rc = None, 0
        start = time.monotonic()
        try:
            lib = ctypes.CDLL(req["lib"], mode=os.RTLD_NOW | os.RTLD_LOCAL)  # static initialisers run here
            fn, with_args = _entry(lib)
            if fn is None:
                os.write(2, f"ksweep: {req['lib']} has no ksweep_main: build it with -Dmain=ksweep_main\n".encode())
                rc = 127
            elif with_args:
                args = [a.encode() for a in req["argv"]]
                rc = fn(len(args), (ctypes.c_char_p * (len(args) + 1))(*args, None))
            else:
                rc = fn()
        except OSError as exc:
            os.write(2, f"ksweep: cannot load {req['lib']}: {exc}\n".encode())
            rc = 127
        finally:
            self.cxx.flush_all()
            self.libc.fflush(None)
            seconds = time.monotonic() - start
        _kill_leftovers()  # what the program started dies with its run, as a process group would
        broken = self.context.broken()
        sticky = False
        if lib is not None and broken is None:  # a broken host exits instead of unloading
            _pin_loaded_libraries(self.pinned, req["lib"])
            _ctypes.dlclose(lib._handle)  # destructors and atexit handlers may still print
            self.libc.fflush(None)
            sticky = _still_loaded(req["lib"])
        os.dup2(self.devnull, 1)
        os.dup2(self.stderr, 2)
        os.environ.clear()
        os.environ.update(saved_env)
        return {"ok": True, "rc": rc & 0xFF, "seconds": seconds, "fatal": broken is not None,
                "message": broken or "", "sticky": sticky}


def main() -> int:
    requests = os.fdopen(os.dup(0), "r")
    reply_fd = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # programs neither read the requests
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # nor write into the answers
    host = Host(reply_fd)
    host.send({"ok": True, "hello": host.context.name, "pid": os.getpid()})
    for line in requests:
        req = json.loads(line)
        if req.get("op") == "exit":
            break
        answer = host.run(req)
        host.send(answer)
        if answer["fatal"]:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
