#!/usr/bin/env python3
"""Speed baseline for flash_attn.toml: PyTorch's scaled_dot_product_attention on the same shapes.

Runs on the GPU machine (needs PyTorch with CUDA). For each shape (B, H, S, D) x causal it makes
fp16 Q, K, V of shape [B, H, S, D] drawn like flash_attn.cu's harness (Q in [-4, 4), K and V in
[-1, 1)), times SDPA with CUDA events (warm-up, then every repetition between its own pair of
events, queued behind a GPU sleep so host launch overhead is not measured; median) and prints

    @@RESULT B=2 H=8 S=2048 D=64 causal=0 sdpa_ms=0.0712 sdpa_tflops=60.3

TFLOP/s counts 4*B*H*S*S*D (QK^T and PV), halved under the causal mask, as flash_attn.cu does.

    python sdpa_baseline.py                      # the six shapes of flash_attn.toml
    python sdpa_baseline.py 2 8 2048 64 0        # one shape: B H S D causal
    python sdpa_baseline.py --backend flash      # force one SDPA backend (flash, efficient, cudnn, math)
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys

SHAPES = [(1, 8, 512, 64), (2, 8, 2048, 64), (2, 8, 2048, 128)]


def backend_context(torch, name: str):
    if name == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    member = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
    return sdpa_kernel(getattr(SDPBackend, member[name]))


def time_sdpa(torch, B: int, H: int, S: int, D: int, causal: bool, warmup: int, reps: int, backend: str) -> float:
    F = torch.nn.functional
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (B, H, S, D)
    q = ((torch.rand(shape, device="cuda", generator=gen) * 2 - 1) * 4).half()
    k = (torch.rand(shape, device="cuda", generator=gen) * 2 - 1).half()
    v = (torch.rand(shape, device="cuda", generator=gen) * 2 - 1).half()

    with backend_context(torch, backend), torch.inference_mode():
        def fn():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        torch.cuda._sleep(5_000_000)  # a few ms of GPU spin: the timed calls queue up behind it
        for i in range(reps):
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", nargs="*", type=int, help="B H S D causal (default: all shapes of flash_attn.toml)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--backend", choices=["auto", "flash", "efficient", "cudnn", "math"], default="auto")
    args = ap.parse_args(argv)
    if args.reps < 20:
        ap.error("--reps must be at least 20")
    if args.shape and len(args.shape) != 5:
        ap.error("give all of B H S D causal, or nothing")

    try:
        import torch
    except ImportError:
        print("sdpa_baseline.py needs PyTorch (with CUDA)", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("no CUDA device visible to PyTorch", file=sys.stderr)
        return 1

    if args.shape:
        B, H, S, D, c = args.shape
        cases = [((B, H, S, D), bool(c))]
    else:
        cases = [(s, c) for s in SHAPES for c in (False, True)]

    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, backend={args.backend}")
    for (B, H, S, D), causal in cases:
        ms = time_sdpa(torch, B, H, S, D, causal, args.warmup, args.reps, args.backend)
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        tflops = flops / (ms * 1e-3) / 1e12
        print(f"@@RESULT B={B} H={H} S={S} D={D} causal={int(causal)} sdpa_ms={ms:.6f} sdpa_tflops={tflops:.4f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
