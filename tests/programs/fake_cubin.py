#!/usr/bin/env python3
"""A stand-in for nvcc -cubin in kernel-mode tests on the stand-in backend (which runs Python
"kernels", not cubins): ``fake_cubin.py [-DNAME=VALUE ...] -o BINARY WRAPPER`` writes BINARY
(the defines and the wrapper's name: a build of its own per config) and prints the ptxas
report of one entry function, ``vadd``, as nvcc -Xptxas=-v does."""

import sys


def main(argv):
    out = argv[argv.index("-o") + 1]
    defines = [a for a in argv if a.startswith("-D")]
    with open(out, "w") as f:
        f.write("\n".join([*defines, argv[-1]]) + "\n")
    print("ptxas info    : 0 bytes gmem\n"
          "ptxas info    : Compiling entry function 'vadd' for 'sm_90a'\n"
          "ptxas info    : Function properties for vadd\n"
          "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
          "ptxas info    : Used 8 registers, used 0 barriers, 380 bytes cmem[0]", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
