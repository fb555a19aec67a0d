#!/usr/bin/env python3
"""Sustained bf16 GEMM throughput and SM clock on the GPU machine: runs
8192^3 bf16 products back to back for DURATION seconds, reporting TFLOP/s per
second of run time, while nvidia-smi samples the SM clock, power and
temperature every 200 ms. Shows whether (and how far) the clock drops under a
long matrix load, which the simulator's fixed clock does not model.
Usage (GPU machine): validation/microbench/sustained_gemm.py OUTDIR [DURATION_S]
Writes OUTDIR/sustained_gemm.csv and OUTDIR/sustained_clocks.csv."""
import os
import subprocess
import sys
import time

import torch


def main():
    out = sys.argv[1]
    duration = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    os.makedirs(out, exist_ok=True)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu",
                            "--format=csv,noheader", "-lms", "200"],
                           stdout=open(os.path.join(out, "sustained_clocks.csv"), "w"))
    rows = ["second,products,tflops"]
    start = time.time()
    second = 0
    while time.time() - start < duration:
        t0 = torch.cuda.Event(enable_timing=True)
        t1 = torch.cuda.Event(enable_timing=True)
        t0.record()
        k = 50
        for _ in range(k):
            torch.matmul(a, b, out=c)
        t1.record()
        t1.synchronize()
        ms = t0.elapsed_time(t1)
        rows.append(f"{time.time() - start:.2f},{k},{2.0 * n ** 3 * k / (ms * 1e-3) / 1e12:.1f}")
        second += 1
    smi.terminate()
    smi.wait()
    assert torch.isfinite(c.float().abs().max()).item()
    with open(os.path.join(out, "sustained_gemm.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
