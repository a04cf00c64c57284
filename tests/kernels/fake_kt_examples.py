"""Stand-ins for the kernels of kt_examples_standin.cu, computing what Kernel Tuner's
convolution_kernel and cn_pnpoly compute, from the module's constant memory (d_filter;
d_vertices and d_slopes), over the part of the output that the launch's grid, block and
tiles cover (a wrong grid divisor leaves elements unwritten). Named as the cubin names
them (C++ names: the real kernels are not extern "C")."""

import numpy as np

SYMBOLS = {"d_filter": 33 * 33 * 4, "d_vertices": 600 * 8, "d_slopes": 600 * 4}


def convolution_kernel(params, grid, block, smem, output, inp, filt, symbols):
    """output (h × w) = the filter_height × filter_width correlation of the input (with its
    border) with d_filter; square images only."""
    fh, fw = params["filter_height"], params["filter_width"]
    weights = symbols["d_filter"].view(np.float32)[: fh * fw].reshape(fh, fw)
    side = int(round(output.size ** 0.5))
    image = inp.reshape(side + fh // 2 * 2, side + fw // 2 * 2)
    acc = np.zeros((side, side), np.float32)
    for i in range(fh):
        for j in range(fw):
            acc += weights[i, j] * image[i:i + side, j:j + side]
    rows = min(side, grid[1] * block[1] * params["tile_size_y"])
    cols = min(side, grid[0] * block[0] * params["tile_size_x"])
    output.reshape(side, side)[:rows, :cols] = acc[:rows, :cols]


def is_between(a, b, c, method):
    """pnpoly.cu's four ways of saying that a lies between b and c."""
    if method == 0:
        return (b > a) != (c > a)
    if method == 1:
        return ((b <= a) & (c > a)) | ((b > a) & (c <= a))
    if method == 2:
        return ((a - b) == 0) | ((a - b) * (a - c) < 0)
    return ((a - b) * (a - c) < 0) | (a - b == 0)


def crossings(points, vertices, slopes, between_method, use_precomputed_slopes, use_method):
    """cn_pnpoly's answer for each point (float32 arithmetic, no fused multiply-add)."""
    p = points.reshape(-1, 2)
    v = vertices.reshape(-1, 2)
    count = np.zeros(len(p), np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(len(v)):
            vj, vk = v[j], v[j - 1]
            slope = slopes[j] if use_precomputed_slopes else (vk[0] - vj[0]) / (vk[1] - vj[1])
            between = is_between(p[:, 1], vj[1], vk[1], between_method)
            if use_method == 0:
                count ^= (between & (p[:, 0] < slope * (p[:, 1] - vj[1]) + vj[0])).astype(np.int32)
            else:
                count += (between & (p[:, 0] < vj[0] + slope * (p[:, 1] - vj[1]))).astype(np.int32)
    return count & 1


def cn_pnpoly(params, grid, block, smem, bitmap, points, n, symbols):
    n = int(n)
    inside = crossings(points[: 2 * n], symbols["d_vertices"].view(np.float32), symbols["d_slopes"].view(np.float32),
                       params["between_method"], params["use_precomputed_slopes"], params["use_method"])
    covered = min(n, grid[0] * block[0] * params["tile_size"])
    bitmap[:covered] = inside[:covered]


_Z18convolution_kernelPfS_S_ = convolution_kernel
_Z9cn_pnpolyPiP6float2i = cn_pnpoly
