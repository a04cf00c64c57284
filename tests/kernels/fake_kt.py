"""Stand-ins for the kernels of kt_examples.cu, each writing only the part of its output
that its grid, block and tiles cover (a wrong grid leaves elements unwritten)."""

import numpy as np

SYMBOLS = {"d_filter": 3 * 3 * 4, "d_vertices": 16 * 8}


def matmul_kernel(params, grid, block, smem, C, A, B):
    n = int(round(C.size ** 0.5))
    rows = min(n, grid[1] * block[1] * params.get("tile_size_y", 1))
    cols = min(n, grid[0] * block[0] * params.get("tile_size_x", 1))
    full = A.reshape(n, n) @ B.reshape(n, n)
    C.reshape(n, n)[:rows, :cols] = full[:rows, :cols]


def convolution_kernel(params, grid, block, smem, out, inp, filt, symbols):
    """out (h × w) = 3 × 3 correlation of inp ((h + 2) × (w + 2)) with d_filter (not the argument)."""
    f = symbols["d_filter"].view(np.float32).reshape(3, 3)
    w = grid[0] * block[0] * params.get("tile_size_x", 1)
    h = grid[1] * block[1] * params.get("tile_size_y", 1)
    H = W = int(round(out.size ** 0.5))
    image = inp.reshape(H + 2, W + 2)
    acc = np.zeros((H, W), np.float32)
    for j in range(3):
        for i in range(3):
            acc += f[j, i] * image[j:j + H, i:i + W]
    out.reshape(H, W)[:min(h, H), :min(w, W)] = acc[:min(h, H), :min(w, W)]


def cn_pnpoly(params, grid, block, smem, bitmap, points, n, symbols):
    """Crossing number of each point against the polygon in d_vertices."""
    v = symbols["d_vertices"].view(np.float32).reshape(-1, 2)
    p = points.reshape(-1, 2)
    inside = np.zeros(len(p), bool)
    for j in range(len(v)):
        k = j - 1
        (xj, yj), (xk, yk) = v[j], v[k]
        crosses = ((yj > p[:, 1]) != (yk > p[:, 1])) & (
            p[:, 0] < (xk - xj) * (p[:, 1] - yj) / (yk - yj + 1e-30) + xj)
        inside ^= crosses
    covered = min(int(n), grid[0] * block[0] * params.get("tile_size", 1))
    bitmap[:covered] = inside[:covered].astype(np.int32)
