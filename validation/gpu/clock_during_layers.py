#!/usr/bin/env python3
"""SM clock while the project's MoE kernels run on the GPU machine: the clock the
recorded timings were taken at, and the clock a long run of the same layer settles to.
Checks the simulator's clock governor (docs/simulator.md "Clocks under load") on real
layers rather than on the GEMM loads it was fitted to (clock_vs_load.py).

For each scenario: `tdmsim gpu-case` writes its case, then the runner runs it twice while
`nvidia-smi` samples the SM clock and power every 25 ms:
  validation  --warmup 5 --repeats 30, as validation/gpu/run_batch.sh times the recorded
              layers (the clock samples of this span are what those timings ran at);
  sustained   repeats for about SUSTAIN seconds of layer time, back to back; the clock of
              its samples after the first second is the settled one.
A rest of 3 s separates runs so one run's heat and power state do not carry over.

Usage (GPU machine, repository root):
  validation/gpu/clock_during_layers.py OUTDIR --runner TDMSIM_GPU --tdmsim TDMSIM
      [--sustain S] SCENARIO.yaml ...
Writes OUTDIR/clock_during_layers.csv (scenario, mode, layer us median, SM clock median /
p10 / p90 and power median over the span's samples) and OUTDIR/clock_during_layers_samples.csv."""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "microbench"))
from clock_vs_load import Sampler  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402


def run(runner, case, out, warmup, repeats):
    return tdmsimtools.gpu_run(runner, case, out, ["--warmup", warmup, "--repeats", repeats])["timing"]["total_us_median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--runner", required=True)
    ap.add_argument("--tdmsim", required=True)
    ap.add_argument("--sustain", type=float, default=6.0)
    ap.add_argument("scenarios", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "work")
    sampler = Sampler(None, interval_ms=25)
    spans = []
    for scen in a.scenarios:
        name = os.path.splitext(os.path.basename(scen))[0]
        case = os.path.join(work, "case", name)
        tdmsimtools.gpu_case(a.tdmsim, scen, case)
        for mode in ("validation", "sustained"):
            sampler.label = "rest"
            time.sleep(3.0)
            if mode == "validation":
                warmup, repeats = 5, 30
            else:
                per = run(a.runner, case, os.path.join(work, "probe", name), 1, 3)
                warmup, repeats = 5, max(30, int(a.sustain * 1e6 / per))
            sampler.label = f"{name}/{mode}"
            t0 = time.time() - sampler.t0
            us = run(a.runner, case, os.path.join(work, mode, name), warmup, repeats)
            t1 = time.time() - sampler.t0
            spans.append((name, mode, repeats, us, t0, t1))
            print(f"{name:32s} {mode:10s} {repeats:6d} x {us:10.1f} us", flush=True)
    sampler.label = "end"
    time.sleep(0.3)
    sampler.stop()
    with open(os.path.join(a.out, "clock_during_layers_samples.csv"), "w") as f:
        f.write("second,span,sm_mhz,mem_mhz,power_w,temp_c,clock_event_reasons\n")
        for r in sampler.rows:
            f.write(",".join(str(x) for x in r) + "\n")
    lines = ["scenario,mode,repeats,layer_us_median,span_s,samples,sm_mhz_median,sm_mhz_p10,sm_mhz_p90,power_w_median"]
    for name, mode, repeats, us, t0, t1 in spans:
        skip = 1.0 if mode == "sustained" else 0.0
        rows = [r for r in sampler.rows if r[1] == f"{name}/{mode}" and r[0] >= t0 + skip]
        if not rows:
            lines.append(f"{name},{mode},{repeats},{us:.1f},{t1 - t0:.2f},0,,,,")
            continue
        sm = sorted(float(r[2]) for r in rows)
        q = lambda p: sm[min(len(sm) - 1, int(p * len(sm)))]
        pw = statistics.median(float(r[4]) for r in rows)
        lines.append(f"{name},{mode},{repeats},{us:.1f},{t1 - t0:.2f},{len(rows)},{statistics.median(sm):.0f},"
                     f"{q(0.1):.0f},{q(0.9):.0f},{pw:.1f}")
    with open(os.path.join(a.out, "clock_during_layers.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
