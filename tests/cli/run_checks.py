#!/usr/bin/env python3
"""Property checks of `tdmsim run` (CTest runs each mode as its own test).

  floor SCENARIO        every path's predicted time is at or above its physical floor
  deterministic SCENARIO  two runs write byte-identical stats.json and trace.json
  fresh SCENARIO        each path of --path both and each draw of --repeat gives exactly what a run
                        of that path alone (at that draw's seed) gives: runs do not share a machine
  repeat SCENARIO       --repeat 6: one total per draw, p50/p99 by nearest rank, draws differ
  bandwidth SCENARIO MACHINE_FILE  more HBM bandwidth is never slower (3 values over MACHINE_FILE)
  tokens SCENARIO [sources]  more tokens are never faster (1-4096 tokens), on each of the
                        scenario's paths; with `sources`, for each kernel source (ours, AITER's)
  skew SCENARIO         more routing skew is never faster for the software path, on the GPU
                        that hosts the hot experts (expert parallel; docs/moe-timing.md "Skew")
  occupancy SCENARIO MACHINE_FILE  every stage reports its workgroups per CU and what limits
                        them (docs/moe-timing.md "Metrics"), consistent with the machine's wave
                        slots, and the text table shows them; the same machine with a quarter
                        of its registers per CU gives fewer, limited by registers

Usage: run_checks.py TDMSIM WORKDIR MODE SCENARIO [MACHINE_FILE | sources]"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def run(tdmsim, args, out):
    shutil.rmtree(out, ignore_errors=True)
    tdmsimtools.expect_exit(tdmsim, "run", *args, "--quiet", "--output", out)
    return tdmsimtools.read_summary(out)


def total(summary, path):
    for p in summary["paths"]:
        if p["path"] == path:
            return p["total_us"]
    sys.exit(f"no {path} path in summary")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def main():
    tdmsim, work, mode, scenario = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    scenario = os.path.abspath(scenario)
    if mode == "floor":
        s = run(tdmsim, [scenario], os.path.join(work, "out"))
        for p in s["paths"]:
            print(f"{p['path']}: {p['total_us']:.2f} us, floor {p['floor']['us']:.2f} us")
            assert p["total_us"] >= p["floor"]["us"], "prediction below the physical floor"
    elif mode == "deterministic":
        a = os.path.join(work, "a")
        b = os.path.join(work, "b")
        run(tdmsim, [scenario, "--trace"], a)
        run(tdmsim, [scenario, "--trace"], b)
        for name in ("stats.json", "trace.json"):
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                assert fa.read() == fb.read(), f"{name} differs between two identical runs"
        print("stats.json and trace.json identical")
        # The trace shows what the issue asks for: workgroups on CU slots, HBM
        # traffic and, on the TDM path, the unit's descriptors and time slots.
        with open(os.path.join(a, "trace.json")) as f:
            names = {e.get("name", "") for e in json.load(f)["traceEvents"]}
        assert any(n.startswith("moe_gate_up wg ") for n in names), "no software workgroup slices"
        assert "read GB/s" in names, "no HBM traffic counter"
        paths = [p["path"] for p in tdmsimtools.read_summary(a)["paths"]]
        if "tdm" in paths:
            assert any(n.startswith("tdm_gate_up wg ") for n in names), "no TDM workgroup slices"
            assert any(n.endswith(" fetch+decode") for n in names), "no descriptor fetch slices"
            assert any(" slot " in n for n in names), "no TDM time-slot slices"
    elif mode == "occupancy":
        machine = os.path.abspath(sys.argv[5])

        def stages(s):
            return [st for p in s["paths"] for st in p["stages"]]

        def check(s, max_per_cu):
            for st in stages(s):
                per_cu, limiter = st["workgroups_per_cu"], st["occupancy_limiter"]
                print(f"{st['kernel']}: {st['workgroups']} workgroups, {per_cu} a CU ({limiter or '-'})")
                if st["workgroups"] == 0:
                    assert per_cu == 0 and limiter == "", f"{st['kernel']}: no workgroups, yet {per_cu} ({limiter})"
                else:
                    assert 1 <= per_cu <= max_per_cu, f"{st['kernel']}: {per_cu} a CU, the machine's wave slots allow {max_per_cu}"
                    assert limiter in ("waves", "lds", "registers"), f"{st['kernel']}: limiter {limiter!r}"

        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        r = tdmsimtools.expect_exit(tdmsim, "run", scenario, "--machine", machine, "--output", out)
        s = tdmsimtools.read_summary(out)
        # At most the SIMDs' wave slots (a workgroup has one wave at least).
        shown = json.loads(tdmsimtools.expect_exit(tdmsim, "config", "show", machine, "--format", "json").stdout)
        simd_slots = shown["compute"]["simds_per_cu"] * shown["compute"]["wave_slots_per_simd"]
        check(s, simd_slots)
        assert "per CU (limit)" in r.stdout, "no occupancy column in the text table"
        # Each kernel's row of the text table ends with its own count and limiter.
        rows = [line.split() for line in r.stdout.splitlines()]
        for st in stages(s):
            want = ["-"] if st["workgroups"] == 0 else [str(st["workgroups_per_cu"]), f"({st['occupancy_limiter']})"]
            mine = [row for row in rows if st["kernel"] in row]
            assert mine and all(row[-len(want):] == want for row in mine), f"{st['kernel']}: table rows {mine}, want {want}"
        limiters = {st["occupancy_limiter"] for st in stages(s)}
        assert {"waves", "registers"} <= limiters, f"limiters {limiters}: expected waves and registers on {scenario}"
        # A quarter of the register file: a kernel its registers limited holds a quarter as many
        # (floor(F / 4r) = floor(floor(F / r) / 4)) unless another limit binds first; a kernel
        # the wave slots limited becomes register-bound where a quarter of the file binds first.
        small = write(os.path.join(work, "small_regs.yaml"),
                      f"kind: machine\nbase: {machine}\nname: small-regs\ncompute: {{vgpr_file_per_cu: 128KiB}}\n")
        t = run(tdmsim, [scenario, "--machine", small], os.path.join(work, "small"))
        check(t, simd_slots)
        before = {(p["path"], st["kernel"]): st for p in s["paths"] for st in p["stages"]}
        moved = 0
        for p in t["paths"]:
            for st in p["stages"]:
                was = before[(p["path"], st["kernel"])]
                if was["workgroups"] == 0:
                    continue
                if was["occupancy_limiter"] == "registers":
                    assert st["workgroups_per_cu"] == was["workgroups_per_cu"] // 4, \
                        f"{st['kernel']}: {was['workgroups_per_cu']} -> {st['workgroups_per_cu']}"
                    assert st["occupancy_limiter"] == "registers", f"{st['kernel']}: now {st['occupancy_limiter']}"
                    moved += 1
                elif st["occupancy_limiter"] == "registers":
                    assert st["workgroups_per_cu"] < was["workgroups_per_cu"], \
                        f"{st['kernel']}: register-bound at {st['workgroups_per_cu']}, was {was['workgroups_per_cu']} ({was['occupancy_limiter']})"
                    moved += 1
        print(f"{moved} kernels fewer a CU with a quarter of the registers")
        assert moved, "a quarter of the register file changed no kernel's occupancy"
    elif mode == "bandwidth":
        times = []
        for bw in ("2TB/s", "4.8TB/s", "9.6TB/s"):
            m = write(os.path.join(work, f"bw_{bw.replace('/', '_')}.yaml"),
                      f"kind: machine\nbase: {os.path.abspath(sys.argv[5])}\nname: bw\n"
                      f"memory: {{hbm: {{bandwidth: {bw}}}, fabric: {{bandwidth: 20TB/s}}}}\n")
            s = run(tdmsim, [scenario, "--machine", m, "--path", "software"], os.path.join(work, "out"))
            times.append((bw, total(s, "software")))
        print(", ".join(f"{bw}: {t:.2f} us" for bw, t in times))
        for (_, slow), (_, fast) in zip(times, times[1:]):
            assert fast <= slow, "more HBM bandwidth made the layer slower"
    elif mode == "tokens":
        # A layer of more tokens routes more rows through the same experts: more weight
        # rows touched, more products, more adds, on the software path and through the
        # TDM unit alike. Each step is 4-16x the tokens, so far more work than the
        # model's noise (about 2%, docs/sweeps.md "Sensitivity") can hide.
        sources = ("tdmsim", "aiter") if len(sys.argv) > 5 and sys.argv[5] == "sources" else (None,)
        for source in sources:
            series = {}
            for tokens in (1, 16, 128, 1024, 4096):
                extra = f"kernel: {{source: {source}}}\n" if source else ""
                sc = write(os.path.join(work, f"tokens_{tokens}.yaml"),
                           f"base: {scenario}\nname: tokens-{tokens}\ntokens: {tokens}\n{extra}")
                s = run(tdmsim, [sc], os.path.join(work, "out"))
                for p in s["paths"]:
                    series.setdefault(p["path"], []).append((tokens, p["total_us"]))
            for path, times in series.items():
                print(f"{path}{f' ({source})' if source else ''}: " +
                      ", ".join(f"{t} tok {us:.2f} us" for t, us in times))
                for (t0, less), (t1, more) in zip(times, times[1:]):
                    assert more > less, f"{path}: {t1} tokens ({more:.2f} us) not slower than {t0} ({less:.2f} us)"
    elif mode == "skew":
        # Expert parallel over 8 GPUs, all simulated; GPU 0 holds experts 0..E/8-1
        # (contiguous placement), four of which are hot. A larger hot_fraction sends
        # more of the picks to them, i.e. to GPU 0, the slowest, which sets the layer. The block size is fixed so the kernel heuristic
        # does not switch tiles between points, and the workgroup order is block
        # after block (raster_group 1): in groups, a hot expert's extra blocks
        # share its weight reads, which can make a step of skew cheaper
        # (docs/moe-timing.md "Skew"). The steps (20% of the picks) are
        # larger than what block padding can hide, and stop before the hot
        # experts saturate (each takes at most one pick per token).
        times = []
        for frac in (0.0, 0.2, 0.4, 0.5):
            sc = write(os.path.join(work, f"skew_{frac}.yaml"),
                       f"base: {scenario}\nname: skew-{frac}\nparallel: {{ep: 8}}\n"
                       f"kernel: {{stages: 2, block_m: 64, raster_group: 1}}\n"
                       f"routing: {{source: hot, hot_experts: [0, 1, 2, 3], hot_fraction: {frac}}}\n")
            s = run(tdmsim, [sc, "--path", "software"], os.path.join(work, "out"))
            times.append((frac, total(s, "software")))
        print(", ".join(f"hot {f:.0%}: {t:.2f} us" for f, t in times))
        for (_, less), (_, more) in zip(times, times[1:]):
            assert more >= less, "more routing skew made the software path faster"
    elif mode == "fresh":
        both = run(tdmsim, [scenario, "--path", "both", "--repeat", "2"], os.path.join(work, "both"))
        seed = both["seed"]
        for path in ("software", "tdm"):
            alone = run(tdmsim, [scenario, "--path", path], os.path.join(work, path))
            got = next(p for p in both["paths"] if p["path"] == path)
            want = alone["paths"][0]
            print(f"{path}: --path both {got['total_us']!r} us, alone {want['total_us']!r} us")
            assert got == want, f"{path}: --path both differs from --path {path} (first difference: " + \
                next(k for k in want if got.get(k) != want[k]) + ")"
            reseeded = write(os.path.join(work, "seed1.yaml"), f"base: {scenario}\nname: fresh-seed1\nseed: {seed + 1}\n")
            second = run(tdmsim, [reseeded, "--path", path], os.path.join(work, path + "1"))
            draws = both["repeats"][path]["total_us"]
            print(f"{path}: second draw {draws[1]!r} us, alone at seed {seed + 1}: {second['paths'][0]['total_us']!r} us")
            assert draws[0] == want["total_us"] and draws[1] == second["paths"][0]["total_us"], \
                f"{path}: a --repeat draw differs from a run alone at its seed"
    elif mode == "repeat":
        s = run(tdmsim, [scenario, "--repeat", "6"], os.path.join(work, "out"))
        for path, r in s["repeats"].items():
            v = sorted(r["total_us"])
            print(f"{path}: p50 {r['p50_us']:.2f} us, p99 {r['p99_us']:.2f} us over {v}")
            assert len(v) == 6, "one total per repeat"
            assert v[0] == r["min_us"] and v[-1] == r["max_us"] and r["p99_us"] == v[-1]
            assert r["p50_us"] == v[2], "p50 is the nearest-rank median"
            assert v[0] < v[-1], "fresh routing draws should not all give the same time"
        # The first repeat is the detailed run: its total is among the repeats'.
        for p in s["paths"]:
            assert p["total_us"] == s["repeats"][p["path"]]["total_us"][0]
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
