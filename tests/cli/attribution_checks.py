#!/usr/bin/env python3
"""CLI checks of the TDM-vs-software attribution (issue #21 part 4; docs/moe-timing.md,
"Where the time goes") and of `path both` on a machine without a TDM unit:

  sum SCENARIO       run --path both: each path's time_by_cause adds up to its total, no
                     cause is negative, and tdm_vs_software's per-cause deltas add up to the
                     difference of the totals exactly (in whole ps; in us to rounding); the
                     text summary prints the table; `tdmsim plot DIR` draws the waterfall
                     (skipped, exit 77, where matplotlib is missing)
  both_no_tdm SCENARIO  a scenario on a machine without a tdm: section: its own `path: both`
                     and `--path both` run the same (the software path), both say so in the
                     text and in summary.json (paths_not_run), and `--path tdm` exits 2 naming
                     the machine and its file, writing nothing
  plot_needs_both SCENARIO  `tdmsim plot` on a software-only run folder: exit 2, nothing written
  responds SCENARIO  the causes follow their parameters: the software path's host launches are
                     its kernels x launch.kernel_launch, at the machine's value and at twice it;
                     a tdm.slot_length of 50 us (past a machine wave's work) makes the TDM
                     path more than 10% slower, shown as TDM slot waiting (release waits), at
                     least a fifth of what it adds, the rest (either way) as memory traffic and
                     bubbles, with the same work (launches, routing, gather, compute)

Usage: attribution_checks.py TDMSIM WORKDIR MODE SCENARIO"""
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def tdmsim(args, expect=0):
    return tdmsimtools.expect_exit(TDMSIM, *args, rc=expect)


def load(folder):
    return tdmsimtools.read_summary(folder)


def have_matplotlib():
    for py in ("python3", "/usr/bin/python3"):
        if shutil.which(py) and subprocess.run([py, "-c", "import matplotlib"],
                                               capture_output=True).returncode == 0:
            return True
    return False


def check_sum(scenario):
    out = os.path.join(WORK, "run")
    r = tdmsim(["run", scenario, "--path", "both", "--output", out, "--force"])
    s = load(out)
    keys = None
    for p in s["paths"]:
        causes = p["time_by_cause"]
        parts = {k: v for k, v in causes.items() if k.endswith("_us")}
        keys = keys or sorted(parts)
        assert sorted(parts) == keys, (parts, keys)
        assert len(parts) == 7, parts
        for k, v in parts.items():
            assert v >= 0, f"{p['path']}: {k} is negative: {v}"
        total = sum(parts.values())
        # Whole ps each: the sum is the total to the rounding of the us values.
        assert abs(total - p["total_us"]) <= 1e-6, f"{p['path']}: causes add up to {total}, total {p['total_us']}"
    tvs = s["tdm_vs_software"]
    sw, tdm = s["paths"][0]["total_us"], s["paths"][1]["total_us"]
    assert abs(tvs["software_us"] - sw) <= 1e-6 and abs(tvs["tdm_us"] - tdm) <= 1e-6, tvs
    assert sum(c["delta_ps"] for c in tvs["causes"]) == tvs["delta_ps"], "per-cause deltas do not add up (ps)"
    assert abs(sum(c["delta_us"] for c in tvs["causes"]) - tvs["delta_us"]) <= 1e-6, tvs
    assert abs(tvs["delta_us"] - (tdm - sw)) <= 1e-6, (tvs["delta_us"], tdm - sw)
    for c in tvs["causes"]:
        by_path = [p["time_by_cause"][c["cause"] + "_us"] for p in s["paths"]]
        assert abs(c["software_us"] - by_path[0]) <= 1e-9 and abs(c["tdm_us"] - by_path[1]) <= 1e-9, c
        assert abs(c["delta_us"] - (c["tdm_us"] - c["software_us"])) <= 1e-6, c
    assert "by cause:" in r.stdout and "wave quantisation and bubbles" in r.stdout, r.stdout
    print(f"{s['scenario']}: software {sw:.2f} us, TDM {tdm:.2f} us, delta {tvs['delta_us']:+.2f} us:")
    for c in tvs["causes"]:
        print(f"  {c['label']:<44} {c['software_us']:9.2f} {c['tdm_us']:9.2f} {c['delta_us']:+9.2f}")
    if not have_matplotlib():
        print("matplotlib missing: the waterfall is not drawn")
        sys.exit(77)
    png = os.path.join(WORK, "causes.png")
    tdmsim(["plot", out, "--output", png, "--force"])
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"


def check_both_no_tdm(scenario):
    runs = {}
    for name, extra in (("scenario", []), ("cli", ["--path", "both"])):
        out = os.path.join(WORK, name)
        r = tdmsim(["run", scenario, "--output", out, "--force", *extra])
        assert "has no tdm: section, so path both runs the software path only" in r.stdout, r.stdout
        s = load(out)
        assert [p["path"] for p in s["paths"]] == ["software"], s["paths"]
        assert "tdm" in s["paths_not_run"] and "mi355x" in s["paths_not_run"]["tdm"], s.get("paths_not_run")
        assert "tdm_vs_software" not in s and "tdm_speedup" not in s
        s.pop("simulation_wall_s")
        runs[name] = s
    assert runs["scenario"] == runs["cli"], "the scenario's path: both and --path both differ"
    out = os.path.join(WORK, "tdm")
    shutil.rmtree(out, ignore_errors=True)
    r = tdmsim(["run", scenario, "--path", "tdm", "--output", out], expect=2)
    assert "--path tdm: machine mi355x" in r.stderr and "mi355x.yaml" in r.stderr, r.stderr
    assert not os.path.exists(out), "output written despite the error"
    # A scenario whose own path is tdm, on a machine without the unit: the key named.
    copy = os.path.join(WORK, "path-tdm.yaml")
    text = open(scenario).read().replace("path: both", "path: tdm")
    assert "path: tdm" in text
    open(copy, "w").write(text)  # its machine and model are named, not relative paths
    r = tdmsim(["run", copy, "--output", out], expect=2)
    line = next(i for i, l in enumerate(text.split("\n"), 1) if l.startswith("path:"))
    assert f"{copy}:{line}:7: path: tdm: machine mi355x" in r.stderr, r.stderr
    assert not os.path.exists(out), "output written despite the error"


def check_plot_needs_both(scenario):
    out = os.path.join(WORK, "sw")
    tdmsim(["run", scenario, "--path", "software", "--quiet", "--output", out, "--force"])
    png = os.path.join(WORK, "sw.png")
    if os.path.exists(png):
        os.remove(png)
    r = tdmsim(["plot", out, "--output", png], expect=2)
    assert "has no tdm_vs_software" in r.stderr, r.stderr
    assert not os.path.exists(png)
    # A results.csv's options given with a run's folder (a waterfall would ignore them).
    r = tdmsim(["plot", out, "--x", "tokens", "--logy", "--output", png], expect=2)
    assert "--x --logy: apply to a sweep's results.csv" in r.stderr and "waterfall" in r.stderr, r.stderr
    assert not os.path.exists(png)
    # A request stream's run compares latencies: said so, not a KeyError.
    serving = os.path.join(tdmsimtools.ROOT, "workloads", "scenarios", "qwen3-30b-a3b-serving-mi500x-tdm.yaml")
    out = os.path.join(WORK, "serving")
    tdmsim(["run", serving, "--quiet", "--output", out, "--force"])
    r = tdmsim(["plot", out, "--output", png], expect=2)
    assert "is a request stream's run" in r.stderr and "no waterfall" in r.stderr, r.stderr
    assert not os.path.exists(png)


def us_of(text):
    units = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
    for u, f in units.items():
        if text.endswith(u):
            return float(text[:-len(u)]) * f
    raise ValueError(text)


def overlay(name, base, body):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"base: {base}\nname: {name}\n{body}")
    return path


def check_responds(scenario):
    base = os.path.join(os.path.dirname(os.path.dirname(scenario)), "machines", "mi500x-tdm.yaml")
    runs = {}
    for name, machine in (("base", base),
                          ("launch", overlay("launch-x2", base, "launch:\n  kernel_launch: 12us\n")),
                          ("slot", overlay("slot-50us", base, "tdm:\n  slot_length: 50us\n"))):
        out = os.path.join(WORK, name)
        tdmsim(["run", scenario, "--machine", machine, "--path", "both", "--quiet", "--output", out, "--force"])
        with open(os.path.join(out, "config.json")) as f:
            machine_config = json.load(f)["machine"]
        launch = us_of(machine_config["launch"]["kernel_launch"])
        boundary = us_of(machine_config["launch"]["kernel_boundary"])
        runs[name] = (load(out), launch, us_of(machine_config["tdm"]["slot_length"]), boundary)
    for name, (s, launch, _, boundary) in runs.items():
        sw = s["paths"][0]
        # Every software stage is host-launched: its launch and its boundary.
        want = len(sw["stages"]) * (launch + boundary)
        got = sw["time_by_cause"]["launch_us"]
        assert abs(got - want) <= 1e-6, (f"{name}: software host launches and boundaries {got} us, "
                                         f"{len(sw['stages'])} x ({launch} + {boundary}) = {want}")
        got_boundary = sw["time_by_cause"]["detail"]["kernel_boundary_us"]
        assert abs(got_boundary - len(sw["stages"]) * boundary) <= 1e-6, f"{name}: kernel_boundary_us {got_boundary}"
    assert runs["base"][3] > 0, "the base machine has no launch.kernel_boundary: the check above tests nothing of it"
    assert runs["launch"][1] == 2 * runs["base"][1]
    tdm0, tdm1 = runs["base"][0]["paths"][1], runs["slot"][0]["paths"][1]
    grew = tdm1["total_us"] - tdm0["total_us"]
    wait0 = tdm0["time_by_cause"]["detail"]["slot_release_wait_us"]
    wait1 = tdm1["time_by_cause"]["detail"]["slot_release_wait_us"]
    waiting = (tdm1["time_by_cause"]["dispatch_and_slot_waiting_us"] -
               tdm0["time_by_cause"]["dispatch_and_slot_waiting_us"])
    print(f"slot_length {runs['base'][2]:g} -> {runs['slot'][2]:g} us: TDM total +{grew:.2f} us, "
          f"release waits {wait0:.2f} -> {wait1:.2f} us")
    # Slots longer than a machine wave's work make the unit's path slower, by far more
    # than the timing noise of the layer (about 2% of its TDM time under a 1% change of
    # clock: docs/studies/README.md "Where the noise is"; at 20 us slots the effect is
    # inside it) ...
    assert grew > 0.1 * tdm0["total_us"], grew
    # ... the slots' release waits grow by a fifth of it at least ...
    c0, c1 = tdm0["time_by_cause"], tdm1["time_by_cause"]
    delta = {k: c1[k] - c0[k] for k in c0 if k != "detail"}
    print("  " + ", ".join(f"{k} {v:+.2f}" for k, v in delta.items()))
    assert wait1 - wait0 >= 0.2 * grew and waiting >= 0.2 * grew, (waiting, wait0, wait1, grew)
    # ... and the rest is what the gating does to the same work: memory traffic it
    # reorders (jobs held back start together and queue at the channels) and the idle
    # CUs and slots later starts leave at the end (bubbles). The causes before the unit
    # (launches, routing and sort, the token gather) and the work itself (compute) are
    # the same layer's: together they move by a tenth of the growth at most.
    # (The causes add up to the total, so the gating's three then carry nine tenths.)
    same_work = sum(abs(delta[k]) for k in ("launch_us", "routing_and_sort_us", "token_gather_us", "compute_us"))
    assert same_work <= 0.1 * grew, (delta, grew)


if __name__ == "__main__":
    TDMSIM, WORK, MODE, SCENARIO = sys.argv[1:5]
    os.makedirs(WORK, exist_ok=True)
    {"sum": check_sum, "both_no_tdm": check_both_no_tdm, "plot_needs_both": check_plot_needs_both,
     "responds": check_responds}[MODE](SCENARIO)
    print("ok")
