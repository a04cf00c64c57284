#!/bin/sh
# The CUTLASS C++ headers this example builds on, from the nvidia-cutlass package (not vendored):
# installs it into .cutlass-pkg/ here and links ./cutlass to its source tree (include/ and
# tools/util/include/), which hopper_gemm.toml passes to nvcc as -I{spec_dir}/cutlass/...
#   sh setup.sh                  # from the package index
#   sh setup.sh WHEEL_DIR        # offline: a folder holding the nvidia_cutlass wheel
set -e
here=$(cd "$(dirname "$0")" && pwd)
version=4.2.0.0
if [ -n "$1" ]; then
  python3 -m pip install -q --no-index --no-deps --find-links "$1" --target "$here/.cutlass-pkg" --upgrade "nvidia-cutlass==$version"
else
  python3 -m pip install -q --no-deps --target "$here/.cutlass-pkg" --upgrade "nvidia-cutlass==$version"
fi
ln -sfn "$here/.cutlass-pkg/cutlass_library/source" "$here/cutlass"
test -f "$here/cutlass/include/cutlass/cutlass.h"
echo "CUTLASS $version headers: $here/cutlass/include"
