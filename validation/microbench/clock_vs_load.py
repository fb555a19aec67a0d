#!/usr/bin/env python3
"""SM clock and board power under several sustained loads on the GPU machine, for the
simulator's clock governor (sim/platform/power.*, docs/simulator.md "Clocks under load").

Each load runs back to back for DURATION seconds (after a warm-up) while `nvidia-smi`
samples the SM clock, memory clock, power, temperature and the active clock-event
reasons every 100 ms; a rest of REST seconds separates loads so that one load's heat does
not carry into the next one's first samples. The loads span matrix-bound (bf16 and fp8
GEMMs of several sizes), memory-bound (skinny bf16 products over weights several times
the L2, a device-to-device copy) and idle, so the relation between what the chip does
(matrix-pipe and HBM activity) and the clock it holds can be fitted.

Inputs are random (never zeros: METHOD.md), weights rotate through enough buffers to
exceed the 50 MiB L2, and the throughput of every batch is timed with CUDA events.

Usage (GPU machine): validation/microbench/clock_vs_load.py OUTDIR [DURATION_S] [REST_S]
Writes OUTDIR/clock_vs_load.csv (one row per load: achieved TFLOP/s and GB/s, SM clock
median / p10 / p90 over the load's samples after its first second, power, temperature,
clock-event reasons seen) and OUTDIR/clock_vs_load_samples.csv (every sample, tagged with
the load that was running)."""
import os
import statistics
import subprocess
import sys
import threading
import time

import torch

GiB = 1 << 30


def gemm_load(m, n, k, dtype, buffers=1):
    """C = A B with `buffers` weight matrices in rotation; returns (step, flops, bytes)."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    bs = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(buffers)]
    if dtype == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = [b.to(torch.float8_e4m3fn) for b in bs]
        one = torch.tensor(1.0, device="cuda")
        state = {"i": 0}

        def step():
            b = b8[state["i"] % buffers]
            state["i"] += 1
            return torch._scaled_mm(a8, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        elem = 1
    else:
        state = {"i": 0}

        def step():
            b = bs[state["i"] % buffers]
            state["i"] += 1
            return torch.matmul(a, b.t())
        elem = 2
    flops = 2.0 * m * n * k
    nbytes = float(m * k * elem + n * k * elem + m * n * 2)
    return step, flops, nbytes


def copy_load(nbytes):
    src = torch.randn(nbytes // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)

    def step():
        dst.copy_(src)
        return dst
    return step, 0.0, 2.0 * nbytes  # read + write


LOADS = [
    # name, kind, factory
    ("idle", "idle", None),
    ("bf16_gemm_8192", "matrix", lambda: gemm_load(8192, 8192, 8192, "bf16")),
    ("bf16_gemm_4096", "matrix", lambda: gemm_load(4096, 4096, 4096, "bf16", buffers=4)),
    ("bf16_gemm_2048", "matrix", lambda: gemm_load(2048, 2048, 2048, "bf16", buffers=8)),
    ("fp8_gemm_8192", "matrix", lambda: gemm_load(8192, 8192, 8192, "fp8")),
    ("fp8_gemm_4096", "matrix", lambda: gemm_load(4096, 4096, 4096, "fp8", buffers=4)),
    # MoE-like shapes: a 512-row expert batch against DeepSeek-V3-sized weights
    ("bf16_gemm_512x4096x7168", "matrix", lambda: gemm_load(512, 4096, 7168, "bf16", buffers=8)),
    ("fp8_gemm_512x4096x7168", "matrix", lambda: gemm_load(512, 4096, 7168, "fp8", buffers=8)),
    # decode-like: 64 rows against weights far larger than the L2 -> HBM-bound
    ("bf16_gemm_64x8192x8192", "memory", lambda: gemm_load(64, 8192, 8192, "bf16", buffers=8)),
    ("fp8_gemm_64x8192x8192", "memory", lambda: gemm_load(64, 8192, 8192, "fp8", buffers=8)),
    ("copy_1GiB", "memory", lambda: copy_load(GiB)),
    ("idle_after", "idle", None),
]


class Sampler:
    FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"

    def __init__(self, path, interval_ms=100):
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={self.FIELDS}", "--format=csv,noheader,nounits",
                                      "-lms", str(interval_ms)], stdout=subprocess.PIPE, text=True)
        self.label = "start"
        self.t0 = time.time()
        self.rows = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.strip().split(",")]
            if len(parts) != 6:
                continue
            self.rows.append((round(time.time() - self.t0, 2), self.label, *parts[1:]))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.thread.join(timeout=2)


def run_load(step, flops, nbytes, duration):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    batches = []
    start = time.time()
    while time.time() - start < duration:
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        k = 0
        t_batch = time.time()
        while time.time() - t_batch < 0.05 or k < 4:
            out = step()
            k += 1
        e1.record()
        e1.synchronize()
        ms = e0.elapsed_time(e1)
        batches.append((time.time() - start, k, ms))
    assert torch.isfinite(out.float()).all().item(), "non-finite result"
    # skip the first second: the clock settles
    steady = [b for b in batches if b[0] >= 1.0] or batches
    secs = sum(b[2] for b in steady) * 1e-3
    ops = sum(b[1] for b in steady)
    return ops * flops / secs / 1e12, ops * nbytes / secs / 1e9


def main():
    out = sys.argv[1]
    duration = float(sys.argv[2]) if len(sys.argv) > 2 else 8.0
    rest = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    sampler = Sampler(os.path.join(out, "clock_vs_load_samples.csv"))
    spans = []
    for name, kind, factory in LOADS:
        sampler.label = "rest"
        time.sleep(rest)
        torch.cuda.empty_cache()
        if factory is None:
            sampler.label = name
            t0 = time.time() - sampler.t0
            time.sleep(duration)
            tf, gb = 0.0, 0.0
        else:
            step, flops, nbytes = factory()
            sampler.label = name
            t0 = time.time() - sampler.t0
            tf, gb = run_load(step, flops, nbytes, duration)
            del step
        spans.append((name, kind, t0, tf, gb))
        print(f"{name:28s} {tf:8.1f} TFLOP/s {gb:8.1f} GB/s", flush=True)
    sampler.label = "end"
    time.sleep(0.5)
    sampler.stop()
    with open(os.path.join(out, "clock_vs_load_samples.csv"), "w") as f:
        f.write("second,load,sm_mhz,mem_mhz,power_w,temp_c,clock_event_reasons\n")
        for r in sampler.rows:
            f.write(",".join(str(x) for x in r) + "\n")
    lines = ["load,kind,tflops,gbps,sm_mhz_median,sm_mhz_p10,sm_mhz_p90,power_w_median,temp_c_max,samples,clock_event_reasons"]
    for name, kind, t0, tf, gb in spans:
        rows = [r for r in sampler.rows if r[1] == name and r[0] >= t0 + 1.0]
        if not rows:
            continue
        sm = sorted(float(r[2]) for r in rows)
        pw = [float(r[4]) for r in rows]
        temp = max(float(r[5]) for r in rows)
        reasons = "|".join(sorted({r[6] for r in rows}))
        q = lambda p: sm[min(len(sm) - 1, int(p * len(sm)))]
        lines.append(f"{name},{kind},{tf:.1f},{gb:.1f},{statistics.median(sm):.0f},{q(0.1):.0f},{q(0.9):.0f},"
                     f"{statistics.median(pw):.1f},{temp:.0f},{len(rows)},{reasons}")
    with open(os.path.join(out, "clock_vs_load.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
