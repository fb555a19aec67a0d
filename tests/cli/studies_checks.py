#!/usr/bin/env python3
"""The studies' quoted figures still hold (docs/studies/README.md, issue #21 part 7).

Each study in docs/studies/ ends with a table of the figures its paragraph quotes:

  | check | figure | quoted | tolerance |
  |---|---|---|---|
  | `speedup.qwen3_64` | TDM speedup, Qwen3-30B-A3B, 64 tokens, mean of 5 draws | 1.123 | ±0.02 |

The quoted values and tolerances live there and only there: this script reads them from
the doc, re-runs a small slice of the study (a sub-sweep of the study's own sweep file
with its axes cut down to the quoted points, same draws, so the figures are the study's
own, or a `tdmsim run` of one of its points), computes each figure and checks
|measured - quoted| <= tolerance (a tolerance written `±N%` is relative to the quoted
value). A check id in the doc that this script does not know, or one it knows for the
study that the doc does not quote, is an error, so the two cannot drift apart.

Usage: studies_checks.py TDMSIM WORKDIR STUDY     (STUDY: a check id prefix below)"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

ROOT = tdmsimtools.ROOT
DOCS = os.path.join(ROOT, "docs", "studies")
SWEEPS = os.path.join(ROOT, "workloads", "sweeps")

ROW = re.compile(r"^\|\s*`([a-z0-9_.]+)`\s*\|([^|]*)\|\s*([-+0-9.eE]+)\s*\|\s*±\s*([0-9.]+)(%?)\s*\|\s*$")


def quoted_checks():
    """{id: (figure, quoted, tolerance as an absolute number, doc file)} from every doc of docs/studies."""
    checks = {}
    for name in sorted(os.listdir(DOCS)):
        if not name.endswith(".md"):
            continue
        with open(os.path.join(DOCS, name)) as f:
            for n, line in enumerate(f, 1):
                if not line.startswith("| `"):
                    continue
                m = ROW.match(line.strip())
                if not m:
                    sys.exit(f"FAILED: {name}:{n}: a check row must read | `id` | figure | value | ±tol[%] |: {line}")
                cid, figure, value, tol, pct = m.groups()
                value = float(value)
                tol = float(tol) * abs(value) / 100 if pct else float(tol)
                if cid in checks:
                    sys.exit(f"FAILED: {name}:{n}: check {cid} quoted twice")
                checks[cid] = (figure.strip(), value, tol, f"{name}:{n}")
    return checks


# ---- slices: sub-sweeps of the studies' sweep files


def slice_sweep(study_file, name, axes, repeat=None, mode=None):
    """A copy of workloads/sweeps/STUDY_FILE with its axes replaced by `axes` ([(key, [values])],
    in file order) and, where given, its repeat and mode; written to WORK/NAME.yaml. A
    study's `jitter` is left out: its noise floor is of the whole study (sens_whole)."""
    with open(os.path.join(SWEEPS, study_file)) as f:
        lines = f.read().split("\n")
    head = []
    for line in lines:
        if line.startswith("axes:"):
            break
        if repeat is not None and line.startswith("repeat:"):
            continue
        if mode is not None and line.startswith("mode:"):
            continue
        if line.startswith("jitter:"):
            continue
        if line.startswith("name:"):
            line = f"name: {name}"
        head.append(line)
    if repeat is not None:
        head.append(f"repeat: {repeat}")
    if mode is not None:
        head.append(f"mode: {mode}")
    head.append("axes:")
    head += [f"  {k}: [{', '.join(map(str, v))}]" for k, v in axes]
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("\n".join(head) + "\n")
    return path


_swept = {}


def sweep(study_file, name, axes, repeat=None, mode=None):
    """Runs the slice (once per name) with -j 2; returns its output folder."""
    if name not in _swept:
        spec = slice_sweep(study_file, name, axes, repeat, mode)
        out = os.path.join(WORK, name)
        shutil.rmtree(out, ignore_errors=True)
        tdmsimtools.expect_exit(TDMSIM, "sweep", spec, "--output", out, "-j", "2", "--quiet")
        _swept[name] = out
    return _swept[name]


def rows(out, **match):
    """results.csv rows whose columns equal `match` (a column named by its last part)."""
    table = tdmsimtools.outputs.read_results_csv(out)

    def col(r, k):
        hits = [c for c in r if c == k or c.endswith("." + k)]
        return r[hits[0]]
    return [r for r in table if all(col(r, k) == str(v) for k, v in match.items())]


def one(out, path, **match):
    hit = rows(out, path=path, **match)
    if len(hit) != 1:
        sys.exit(f"FAILED: {len(hit)} rows of {out} match path={path} {match}")
    return hit[0]


def speedup(out, **match):
    """The point's TDM speedup: the mean of the per-draw ratios with repeat, else software / TDM."""
    t = one(out, "tdm", **match)
    if t.get("tdm_speedup", "") != "":
        return float(t["tdm_speedup"])
    return float(one(out, "software", **match)["total_us"]) / float(t["total_us"])


def ci_half(out, **match):
    """Half the width of the point's 95% interval of the speedup, relative to its mean."""
    t = one(out, "tdm", **match)
    return (float(t["tdm_speedup_ci95_high"]) - float(t["tdm_speedup_ci95_low"])) / 2 / float(t["tdm_speedup"])


def total(out, path, **match):
    return float(one(out, path, **match)["total_us"])


def col_us(out, path, column, **match):
    v = one(out, path, **match)[column]
    return float(v) if v != "" else 0.0


_runs = {}


def run_both(name, scenario, extra=()):
    """`tdmsim run SCENARIO --path both` (once per name); its summary.json."""
    if name not in _runs:
        _runs[name] = tdmsimtools.run(TDMSIM, scenario, os.path.join(WORK, name), path="both", extra=extra)
    return _runs[name]


def cause(summary, key):
    """tdm_vs_software's delta (TDM - software, us) for one cause."""
    return next(c["delta_us"] for c in summary["tdm_vs_software"]["causes"] if c["cause"] == key)


# ---- the figures each study quotes (check id -> how to measure it)

SPEEDUP = "tdm-speedup-vs-tokens.yaml"
QWEN = "qwen3-30b-a3b-decode-mi500x-tdm"


def speedup_slice():
    return sweep(SPEEDUP, "speedup", [("scenario.tokens", [8, 64])])


def decode_run():
    return run_both("qwen3-64", os.path.join(ROOT, "workloads", "scenarios", QWEN + ".yaml"))


def prefill_run():
    return run_both("qwen3-2048", os.path.join(ROOT, "workloads", "scenarios", "qwen3-30b-a3b-prefill-mi500x-tdm.yaml"))


POLICIES = "tdm-policies.yaml"
ALL_POLICIES = ["load_balance", "capacity_first", "low_latency", "dynamic", "custom"]


def policy_slice():
    return sweep(POLICIES, "policies", [("scenario.tokens", [64]), ("machine.tdm.default_policy", ALL_POLICIES)])


def policy_prefill_slice():
    """Seed 1 only (the study's first draw), capacity_first: one 2048-token point. Its
    load_balance twin is the prefill scenario's run (the same layer, policy and seed)."""
    return sweep(POLICIES, "policies-2048", [("scenario.tokens", [2048]),
                                             ("machine.tdm.default_policy", ["capacity_first"])],
                 repeat=1)


SLOTS = "tdm-slot-models.yaml"


def slot_slice():
    return sweep(SLOTS, "slots", [("scenario.routing.source", ["zipf"]), ("scenario.routing.zipf_s", [0]),
                                  ("machine.tdm.slot_model", ["wave_synchronous", "continuous", "skip_drained"]),
                                  ("machine.tdm.slot_length", ["4us", "32us"])])


def slot_rel(model, length, ref="wave_synchronous"):
    out = slot_slice()
    a = total(out, "tdm", slot_model=model, slot_length=length)
    b = total(out, "tdm", slot_model=ref, slot_length=length)
    return a / b - 1


ROUTING = "tdm-routing-in-hardware.yaml"


def routing_slice():
    return sweep(ROUTING, "routing", [("scenario.routing.router_stage", ["timed", "given"]),
                                      ("scenario.tokens", [64, 1024])])


def sw_router_and_sort(tokens):
    out = routing_slice()
    return (col_us(out, "software", "routing_us", router_stage="timed", tokens=tokens) +
            col_us(out, "software", "sort_us", router_stage="timed", tokens=tokens))


def tdm_kernels(tokens, stage):
    """The TDM path's time after its routing stage (the expert kernels, descriptor fetch included)."""
    out = routing_slice()
    return (total(out, "tdm", router_stage=stage, tokens=tokens) -
            col_us(out, "tdm", "routing_us", router_stage=stage, tokens=tokens))


SENS = "tdm-sensitivity.yaml"


def sens_slice():
    return sweep(SENS, "sensitivity", [("machine.tdm.routing_latency", ["x0.8", "x1.2"]),
                                       ("machine.memory.hbm.bandwidth", ["x0.8", "x1.2"]),
                                       ("machine.launch.kernel_launch", ["x0.8", "x1.2"])])


def swing(param):
    for r in tdmsimtools.outputs.read_sensitivity(sens_slice()):
        if r["parameter"] == param:
            return float(r["swing"])
    sys.exit(f"FAILED: {param} not in the sensitivity slice")


def base_speedup():
    return float(tdmsimtools.outputs.read_sensitivity(sens_slice())[0]["base_speedup"])


def sens_whole():
    """sensitivity.json of the whole study (its own file, every axis and its jitter points):
    the noise floor is over all of them, so no slice gives it."""
    if "sens-whole" not in _swept:
        out = os.path.join(WORK, "sens-whole")
        shutil.rmtree(out, ignore_errors=True)
        tdmsimtools.expect_exit(TDMSIM, "sweep", os.path.join(SWEEPS, SENS), "--output", out, "-j", "2", "--quiet")
        _swept["sens-whole"] = out
    with open(os.path.join(_swept["sens-whole"], "sensitivity.json")) as f:
        return json.load(f)


def jitter_speedups():
    return [p["speedup"] for p in sens_whole()["jitter_points"]]


def noise_spread(path, column):
    """max - min of a results.csv column of one path over workloads/sweeps/tdm-noise-clock.yaml
    (the whole sweep: 11 engine clocks within 1% of the base)."""
    if "noise" not in _swept:
        out = os.path.join(WORK, "noise")
        shutil.rmtree(out, ignore_errors=True)
        tdmsimtools.expect_exit(TDMSIM, "sweep", os.path.join(SWEEPS, "tdm-noise-clock.yaml"), "--output", out,
                                "-j", "2", "--quiet")
        _swept["noise"] = out
    values = [float(r[column]) for r in rows(_swept["noise"], path=path)]
    if len(values) != 11:
        sys.exit(f"FAILED: {len(values)} {path} rows in the noise sweep, not 11")
    return max(values) - min(values)


EP_PLACEMENT = "ep-placement.yaml"
EP_REDUNDANCY = "ep-redundancy.yaml"


def ep_placement_slice():
    return sweep(EP_PLACEMENT, "ep-placement", [("scenario.parallel.placement",
                                                 ["contiguous", "round_robin", "load_aware"]),
                                                ("scenario.routing.zipf_s", ["1.0"])])


def ep_redundancy_slice():
    return sweep(EP_REDUNDANCY, "ep-redundancy", [("scenario.parallel.redundant_experts", [0, 16]),
                                                  ("scenario.routing.zipf_s", ["1.5"])])


def ep_col(out, column, **match):
    return float(one(out, "software", **match)[column])


CHECKS = {
    # TDM speedup vs tokens (README.md)
    "speedup.qwen3_8": lambda: speedup(speedup_slice(), tokens=8),
    "speedup.qwen3_64": lambda: speedup(speedup_slice(), tokens=64),
    "speedup.qwen3_64_ci": lambda: ci_half(speedup_slice(), tokens=64),
    "speedup.attr64_delta": lambda: decode_run()["tdm_vs_software"]["delta_us"],
    "speedup.attr64_launch": lambda: cause(decode_run(), "launch"),
    "speedup.attr64_memory": lambda: cause(decode_run(), "memory_traffic"),
    "speedup.attr2048_delta": lambda: prefill_run()["tdm_vs_software"]["delta_us"],
    "speedup.attr2048_launch": lambda: cause(prefill_run(), "launch"),
    "speedup.attr2048_bubbles": lambda: cause(prefill_run(), "wave_quantisation_and_bubbles"),
    "speedup.attr2048_compute": lambda: cause(prefill_run(), "compute"),
    "speedup.attr2048_memory": lambda: cause(prefill_run(), "memory_traffic"),
    # Policies
    **{f"policy.{p}_64": (lambda p=p: speedup(policy_slice(), default_policy=p)) for p in ALL_POLICIES},
    "policy.load_balance_2048_seed1": lambda: prefill_run()["tdm_speedup"],
    "policy.capacity_first_2048_seed1": lambda: speedup(policy_prefill_slice(), default_policy="capacity_first"),
    # Slot models
    "slots.continuous_4us": lambda: slot_rel("continuous", "4us"),
    "slots.skip_drained_4us": lambda: slot_rel("skip_drained", "4us"),
    "slots.wave_sync_32us_over_4us": lambda: (total(slot_slice(), "tdm", slot_model="wave_synchronous",
                                                    slot_length="32us") /
                                              total(slot_slice(), "tdm", slot_model="wave_synchronous",
                                                    slot_length="4us") - 1),
    "slots.continuous_32us": lambda: slot_rel("continuous", "32us"),
    "slots.skip_drained_32us": lambda: slot_rel("skip_drained", "32us", "continuous"),
    # Routing in hardware
    "routing.sw_router_sort_64": lambda: sw_router_and_sort(64),
    "routing.tdm_routing_64": lambda: col_us(routing_slice(), "tdm", "routing_us", router_stage="timed", tokens=64),
    "routing.sw_router_sort_1024": lambda: sw_router_and_sort(1024),
    "routing.tdm_routing_1024": lambda: col_us(routing_slice(), "tdm", "routing_us", router_stage="timed",
                                               tokens=1024),
    "routing.speedup_timed_64": lambda: speedup(routing_slice(), router_stage="timed", tokens=64),
    "routing.speedup_given_64": lambda: speedup(routing_slice(), router_stage="given", tokens=64),
    "routing.tdm_kernels_after_router_64": lambda: tdm_kernels(64, "timed") - tdm_kernels(64, "given"),
    # Where the sensitivity study's noise is (tdm-noise-clock.yaml)
    "sens.noise_tdm_down_spread": lambda: noise_spread("tdm", "down_us"),
    "sens.noise_tdm_total_spread": lambda: noise_spread("tdm", "total_us"),
    "sens.noise_tdm_other_stages_spread": lambda: max(noise_spread("tdm", c) for c in ("routing_us", "gate_up_us")),
    "sens.noise_sw_gate_up_spread": lambda: noise_spread("software", "gate_up_us"),
    # Expert placement over 8 GPUs (ep-placement.md)
    **{f"ep.{p}_s1_us": (lambda p=p: ep_col(ep_placement_slice(), "total_us", placement=p, zipf_s="1.0"))
       for p in ("contiguous", "round_robin", "load_aware")},
    **{f"ep.{p}_s1_picks": (lambda p=p: ep_col(ep_placement_slice(), "ep_rank_picks_max_over_mean", placement=p,
                                               zipf_s="1.0"))
       for p in ("contiguous", "round_robin", "load_aware")},
    "ep.eplb0_s15_us": lambda: ep_col(ep_redundancy_slice(), "total_us", redundant_experts=0, zipf_s="1.5"),
    "ep.eplb16_s15_us": lambda: ep_col(ep_redundancy_slice(), "total_us", redundant_experts=16, zipf_s="1.5"),
    "ep.eplb16_s15_picks": lambda: ep_col(ep_redundancy_slice(), "ep_rank_picks_max_over_mean",
                                          redundant_experts=16, zipf_s="1.5"),
    # Sensitivity
    "sens.base": base_speedup,
    "sens.kernel_launch_swing": lambda: swing("machine.launch.kernel_launch"),
    "sens.hbm_swing": lambda: swing("machine.memory.hbm.bandwidth"),
    "sens.routing_latency_swing": lambda: swing("machine.tdm.routing_latency"),
    "sens.noise_floor": lambda: sens_whole()["noise_floor"],
    "sens.jitter_min": lambda: min(jitter_speedups()),
    "sens.jitter_max": lambda: max(jitter_speedups()),
    "sens.beyond_twice_noise": lambda: sum(1 for p in sens_whole()["parameters"]
                                           if p["reach"] > 2 * sens_whole()["noise_floor"]),
}


def main(study):
    quoted = quoted_checks()
    unknown = sorted(set(quoted) - set(CHECKS))
    if unknown:
        sys.exit(f"FAILED: the docs quote checks this script does not know: {', '.join(unknown)}")
    mine = sorted(c for c in CHECKS if c.startswith(study + "."))
    if not mine:
        sys.exit(f"FAILED: no checks for study {study}")
    missing = [c for c in mine if c not in quoted]
    if missing:
        sys.exit(f"FAILED: docs/studies quotes no figure for {', '.join(missing)}")
    bad = []
    for cid in mine:
        figure, value, tol, where = quoted[cid]
        got = CHECKS[cid]()
        ok = abs(got - value) <= tol + 1e-12
        print(f"{'ok  ' if ok else 'FAIL'} {cid:32s} measured {got:10.4f}  quoted {value:g} ±{tol:g}  ({where}: {figure})")
        if not ok:
            bad.append(cid)
    if bad:
        sys.exit(f"FAILED: {len(bad)} quoted figure(s) no longer hold: {', '.join(bad)}")
    print("ok")


if __name__ == "__main__":
    TDMSIM, WORK, STUDY = sys.argv[1:4]
    os.makedirs(WORK, exist_ok=True)
    main(STUDY)
