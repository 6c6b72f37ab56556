#!/usr/bin/env python3
"""Measures the efficiency fields of a paraplan hardware profile on the GPU this runs on.

A hardware profile carries datasheet peaks plus a few achievable fractions of them (see
docs/hardware.md). This script measures those fractions with PyTorch on one GPU, so a TOML
profile for hardware you own can carry measured numbers instead of guesses:

  gemm.efficiency_max, gemm.half_efficiency_gflop
      bf16 GEMMs of many sizes, fitted to  efficiency = max * F / (F + F_half)  (F = 2mnk FLOPs)
  attention.efficiency, attention.efficiency_flash2
      fused attention, forward plus backward, as FLOP/s over the bf16 peak: PyTorch's cuDNN
      backend (the tuned kernel on Hopper and later) and its FlashAttention-2 backend, in
      FlashAttention's accounting; the profile's figures are x 1.714 of it on causal runs
      (docs/hardware.md)
  memory.efficiency
      device-to-device copy and an elementwise add, bytes moved over the HBM peak

Usage (the peaks are the datasheet's dense numbers, in TFLOP/s and GB/s):
  python3 measure_gpu.py --bf16-tflops 989.4 --memory-gb-s 4800 [--fp8-tflops 1978.9]

Interconnect efficiencies need several GPUs and are not measured here; use nccl-tests.
"""

import argparse
import json
import subprocess

import torch


def time_ms(fn, min_total_ms=200.0, warmup=3):
    """Mean milliseconds per call of fn, launched back to back as training launches kernels."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(stop), 1e-3)
    repeats = max(3, min(2000, int(min_total_ms / once)))
    start.record()
    for _ in range(repeats):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / repeats


def gemm_tflops(m, n, k, dtype=torch.bfloat16):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    ms = time_ms(lambda: a @ b)
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def fp8_gemm_tflops(size):
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return None
    a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    try:
        ms = time_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    except (RuntimeError, TypeError) as error:
        print("fp8 GEMM not measured:", error)
        return None
    return 2.0 * size ** 3 / (ms * 1e-3) / 1e12


def fit_saturating(points, peak_tflops):
    """Least-squares fit of efficiency = max * F / (F + F_half) over (flops, tflops) points."""
    best = None
    for step in range(0, 601):
        half = 10 ** (6 + step * 0.01)  # 1 MFLOP .. 1 TFLOP, log-spaced
        shape = [f / (f + half) for f, _ in points]
        measured = [t / peak_tflops for _, t in points]
        scale = sum(s * e for s, e in zip(shape, measured)) / sum(s * s for s in shape)
        error = sum((scale * s - e) ** 2 for s, e in zip(shape, measured))
        if best is None or error < best[0]:
            best = (error, scale, half)
    return best[1], best[2]


def attention_tflops(backend, batch, heads, seq, head_dim, causal):
    from torch.nn.attention import sdpa_kernel
    shape = (batch, heads, seq, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    forward_flops = 4.0 * batch * heads * seq * seq * head_dim / (2.0 if causal else 1.0)

    def forward():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def forward_backward():
        forward().backward(grad)

    with sdpa_kernel([backend]):
        forward_ms = time_ms(forward)
        both_ms = time_ms(forward_backward)
    # Backward does 2.5x the forward's FLOPs (FlashAttention-2 paper's accounting).
    return forward_flops / (forward_ms * 1e-3) / 1e12, 3.5 * forward_flops / (both_ms * 1e-3) / 1e12


def memory_gb_s():
    elements = 1 << 30  # 2 GiB of bf16 per tensor: far larger than any L2
    x = torch.empty(elements, device="cuda", dtype=torch.bfloat16).normal_()
    y = torch.empty_like(x)
    z = torch.empty_like(x)
    nbytes = x.numel() * x.element_size()
    copy = 2 * nbytes / (time_ms(lambda: y.copy_(x)) * 1e-3) / 1e9
    add = 3 * nbytes / (time_ms(lambda: torch.add(x, y, out=z)) * 1e-3) / 1e9
    return copy, add


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bf16-tflops", type=float, required=True, help="dense bf16 peak, TFLOP/s")
    parser.add_argument("--memory-gb-s", type=float, required=True, help="HBM peak, GB/s")
    parser.add_argument("--fp8-tflops", type=float, default=0.0, help="dense fp8 peak, TFLOP/s")
    parser.add_argument("--tf32-tflops", type=float, default=0.0, help="dense tf32 peak, TFLOP/s")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        report["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,clocks.max.sm,power.limit", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass

    shapes = [(s, s, s) for s in (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)]
    # Transformer-like GEMMs: tokens x hidden -> qkv / out / MLP for hidden 4096 and 8192.
    shapes += [(8192, 6144, 4096), (8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336),
               (16384, 10240, 8192), (16384, 8192, 8192), (16384, 28672, 8192), (16384, 8192, 28672),
               (2048, 4096, 4096), (1024, 1024, 4096), (4096, 1024, 1024)]
    points = []
    for m, n, k in shapes:
        tflops = gemm_tflops(m, n, k)
        points.append((2.0 * m * n * k, tflops))
        print(f"gemm bf16 {m}x{n}x{k}: {tflops:7.1f} TFLOP/s = {tflops / args.bf16_tflops:.3f} of peak")
    efficiency_max, half_flops = fit_saturating(points, args.bf16_tflops)
    # A GPU at its power limit lowers its clocks under sustained load: training sees this rate,
    # not the one of a short burst, so compare the two on the same GEMM.
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    burst, sustained = (2.0 * 8192 ** 3 / (time_ms(lambda: a @ b, window) * 1e-3) / 1e12 for window in (20, 3000))
    print(f"gemm bf16 8192^3: {burst:7.1f} TFLOP/s over 20 ms, {sustained:7.1f} over 3 s "
          f"= {sustained / args.bf16_tflops:.3f} of peak")
    report["gemm"] = {
        "points": [{"flops": f, "tflops": t} for f, t in points],
        "best_efficiency": max(t for _, t in points) / args.bf16_tflops,
        "fit_efficiency_max": efficiency_max,
        "fit_half_efficiency_gflop": half_flops / 1e9,
        "implied_fixed_overhead_us": half_flops / (efficiency_max * args.bf16_tflops * 1e12) * 1e6,
        "burst_8192_efficiency": burst / args.bf16_tflops,
        "sustained_8192_efficiency": sustained / args.bf16_tflops,
    }
    print("gemm fit:", json.dumps({k: v for k, v in report["gemm"].items() if k != "points"}))

    if args.fp8_tflops > 0:
        fp8 = fp8_gemm_tflops(8192)
        if fp8:
            report["fp8_gemm_8192_efficiency"] = fp8 / args.fp8_tflops
            print(f"gemm fp8 8192^3: {fp8:7.1f} TFLOP/s = {fp8 / args.fp8_tflops:.3f} of peak")
    if args.tf32_tflops > 0:
        torch.backends.cuda.matmul.allow_tf32 = True
        tf32 = gemm_tflops(8192, 8192, 8192, torch.float32)
        report["tf32_gemm_8192_efficiency"] = tf32 / args.tf32_tflops
        print(f"gemm tf32 8192^3: {tf32:7.1f} TFLOP/s = {tf32 / args.tf32_tflops:.3f} of peak")

    # Training stacks use the fastest fused kernel they have (Transformer Engine picks cuDNN on
    # Hopper); take the better backend as the profile's number.
    from torch.nn.attention import SDPBackend
    report["attention"] = []
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION):
        for batch, heads, seq, head_dim, causal in [(4, 32, 4096, 128, True), (2, 32, 8192, 128, True),
                                                    (4, 32, 4096, 128, False), (8, 64, 2048, 128, True)]:
            try:
                forward, both = attention_tflops(backend, batch, heads, seq, head_dim, causal)
            except RuntimeError as error:
                print(f"attention with {backend.name} not measured:", error)
                break
            report["attention"].append({"backend": backend.name, "batch": batch, "heads": heads, "seq": seq,
                                        "head_dim": head_dim, "causal": causal,
                                        "forward_efficiency": forward / args.bf16_tflops,
                                        "forward_backward_efficiency": both / args.bf16_tflops})
            print(f"attention {backend.name} b{batch} h{heads} s{seq} d{head_dim} causal={causal}: "
                  f"forward {forward:6.1f}, forward+backward {both:6.1f} TFLOP/s "
                  f"= {both / args.bf16_tflops:.3f} of peak")

    copy, add = memory_gb_s()
    report["memory"] = {"copy_gb_s": copy, "add_gb_s": add, "copy_efficiency": copy / args.memory_gb_s,
                        "add_efficiency": add / args.memory_gb_s}
    print(f"memory: copy {copy:7.1f} GB/s = {copy / args.memory_gb_s:.3f}, "
          f"add {add:7.1f} GB/s = {add / args.memory_gb_s:.3f} of peak")

    if args.json:
        with open(args.json, "w") as out:
            json.dump(report, out, indent=2)


if __name__ == "__main__":
    main()
