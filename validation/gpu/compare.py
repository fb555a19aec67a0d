#!/usr/bin/env python3
"""One numerics row: GPU y against the emulator's y for a scenario (CSV line on stdout).

compare.py NAME EMULATOR_Y.npy GPU_Y.npy
rel_frobenius = ||y_gpu - y_emu|| / ||y_emu|| over finite values; non-finite GPU
values are counted separately (any is a failure)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402


def main():
    name, ref_path, gpu_path = sys.argv[1:4]
    ref = np.load(ref_path).astype(np.float64)
    gpu = np.load(gpu_path).astype(np.float64)
    if ref.shape != gpu.shape:
        print(f"{name},,,,shape {ref.shape} vs {gpu.shape},,,")
        return 1
    nonfinite = int((~np.isfinite(gpu)).sum())
    d = np.where(np.isfinite(gpu), gpu - ref, 0.0)
    den = np.linalg.norm(ref)
    rel = float(np.linalg.norm(d) / den) if den > 0 else float(np.linalg.norm(d))
    summary = os.path.join(os.path.dirname(ref_path), "summary.json")
    dtype = quant = tokens = ""
    if os.path.exists(summary):
        s = tdmsimtools.read_summary(os.path.dirname(ref_path))
        dtype, quant, tokens = s["shape"]["dtype"], s["shape"]["quant"], s["shape"]["tokens"]
    rms = float(np.sqrt(np.mean(ref * ref))) if ref.size else 0.0
    print(f"{name},{dtype},{quant},{tokens},{rel:.6e},{float(np.abs(d).max()) if d.size else 0:.6e},"
          f"{rms:.6e},{nonfinite}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
