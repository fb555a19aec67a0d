#!/usr/bin/env python3
"""GEMM roofline sweep through the vendor BLAS (PyTorch): bf16 and fp8 e4m3,
M, N, K each in {16, 64, 256, 1024, 4096, 8192, 16384}. Method (METHOD.md):
random non-zero inputs, three warm-ups, inputs rotated over several sets when one
set would sit in the 60 MiB L2. Each timed sample replays a CUDA graph of
`CALLS` back-to-back products (so host-side launch latency, ~30 us per PyTorch
call, does not pollute small shapes) and divides by CALLS; the median of the
samples is reported. Writes CSV: dtype,M,N,K,sets,reps,median_us,tflops."""
import csv
import math
import sys

import torch

SIZES = [16, 64, 256, 1024, 4096, 8192, 16384]
L2_BYTES = 60 * 2**20


def make_sets(dtype, m, n, k, sets):
    out = []
    for _ in range(sets):
        a = torch.randn(m, k, device="cuda", dtype=torch.float32)
        b = torch.randn(n, k, device="cuda", dtype=torch.float32)
        if dtype == "bf16":
            out.append((a.to(torch.bfloat16), b.to(torch.bfloat16).t()))
        else:
            # e4m3 operands; B column-major as cuBLASLt fp8 requires.
            out.append((a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t()))
    return out


def run(dtype, a, b, scale):
    if dtype == "bf16":
        return torch.matmul(a, b)
    return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)


CALLS = 20  # products per graph replay


def time_point(dtype, m, n, k):
    elem = 2 if dtype == "bf16" else 1
    set_bytes = (m * k + n * k) * elem + m * n * 2
    sets = max(1, min(16, math.ceil(4 * L2_BYTES / set_bytes)))
    data = make_sets(dtype, m, n, k, sets)
    scale = torch.tensor(1.0, device="cuda")
    flops = 2.0 * m * n * k
    # Enough repeats for ~30 ms of work, between 5 and 50.
    est_s = max(flops / 5e14, 5e-6)
    reps = int(min(50, max(5, 0.03 / est_s)))
    for i in range(3):
        a, b = data[i % sets]
        c = run(dtype, a, b, scale)
    torch.cuda.synchronize()
    # One graph holding CALLS products over the rotated sets.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3):
            a, b = data[i % sets]
            c = run(dtype, a, b, scale)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(CALLS):
            a, b = data[i % sets]
            c = run(dtype, a, b, scale)
    graph.replay()
    torch.cuda.synchronize()
    samples = max(3, min(15, reps // 2))
    times = []
    for _ in range(samples):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / CALLS)
    reps = samples * CALLS
    if not torch.isfinite(c.float()).all():
        raise SystemExit(f"non-finite GEMM output at {dtype} {m}x{n}x{k}")
    times.sort()
    med_ms = times[len(times) // 2]
    return sets, reps, med_ms * 1e3, flops / (med_ms * 1e-3) / 1e12


def main():
    out = csv.writer(sys.stdout)
    out.writerow(["dtype", "M", "N", "K", "sets", "reps", "median_us", "tflops"])
    torch.manual_seed(20261129)
    for dtype in ["bf16", "fp8_e4m3"]:
        for m in SIZES:
            for n in SIZES:
                for k in SIZES:
                    sets, reps, us, tf = time_point(dtype, m, n, k)
                    out.writerow([dtype, m, n, k, sets, reps, f"{us:.3f}", f"{tf:.2f}"])
                    sys.stdout.flush()
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
