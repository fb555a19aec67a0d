#!/usr/bin/env python3
"""Small-M GEMMs are bandwidth-bound in the simulator, as on real GPUs: a
16 x 16384 x 16384 bf16 GEMM (B is 512 MiB, read once) must stream B at a
good share of the HBM peak while using a small share of the matrix peak.

Usage: gemm_regime.py TDMSIM WORKDIR MACHINE HBM_PEAK_TBPS MATRIX_PEAK_TFLOPS"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

tdmsim, work, machine, hbm_peak, mma_peak = sys.argv[1:6]
m, n, k = 16, 16384, 16384
shutil.rmtree(work, ignore_errors=True)
s = tdmsimtools.microbench(tdmsim, "gemm", machine, ["--M", m, "--N", n, "--K", k], work)
secs = s["kernel_time_us"] * 1e-6
tbps = (n * k * 2 + m * k * 2 + m * n * 2) / secs / 1e12
tflops = s["throughput"]["value"]
print(f"{machine}: {tflops:.1f} TFLOP/s ({100 * tflops / float(mma_peak):.1f}% of matrix peak), "
      f"{tbps:.2f} TB/s ({100 * tbps / float(hbm_peak):.0f}% of HBM peak)")
assert tflops <= 0.10 * float(mma_peak), "a 16-row GEMM should use little of the matrix peak"
assert tbps >= 0.40 * float(hbm_peak), "a 16-row GEMM should stream its weights near HBM speed"
