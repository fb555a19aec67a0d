#!/usr/bin/env python3
"""CLI checks of the routing stage on both paths (issue #21, part 2):

  both SCENARIO [MACHINE]   run --path both --trace (on MACHINE if given): summary.json has
                            the stage `routing` and routing_us > 0 on both paths, the software
                            path's router kernels before its sort, no sort on the TDM path,
                            the stages sum to the total; the text summary prints the routing
                            line; the trace has both paths' routing slices and the unit's
                            routing track
  given SCENARIO            the same scenario with routing.router_stage: given: no routing
                            stage on the software path, the TDM unit sorts alone (a shorter
                            routing stage than with the router timed)
  sweep SCENARIO            a sweep over tdm.routing_scores_per_clock and tdm.routing_latency
                            (and routing.router_stage): each key changes the TDM path's
                            routing_us (results.jsonl) and results.csv has routing_us

Usage: routing_stage_checks.py TDMSIM WORKDIR MODE SCENARIO [MACHINE]"""
import csv
import json
import os
import shutil
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def tdmsim(args, expect=0):
    return tdmsimtools.expect_exit(TDMSIM, *args, rc=expect)


def fail(msg):
    sys.exit("FAILED: " + msg)


def run(scenario, name, extra=()):
    out = os.path.join(WORK, name)
    r = tdmsim(["run", scenario, "--path", "both", "--force", "--output", out, *extra])
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f), r.stdout, out


def paths_of(s):
    return {p["path"]: p for p in s["paths"]}


def with_key(scenario, text, name):
    copy = os.path.join(WORK, name + ".yaml")
    src = open(scenario).read()
    # The shipped scenarios name their machine and model; the copy resolves them the same way.
    open(copy, "w").write(src.replace("routing:\n", "routing:\n" + text, 1))
    return copy


def both(scenario, machine):
    extra = ["--trace"] + (["--machine", machine] if machine else [])
    s, text, out = run(scenario, "both", extra)
    p = paths_of(s)
    if set(p) != {"software", "tdm"}:
        fail(f"paths {sorted(p)}")
    for name, path in p.items():
        stages = [st["stage"] for st in path["stages"]]
        if "routing" not in stages:
            fail(f"{name}: no routing stage in {stages}")
        if not path["routing_us"] > 0:
            fail(f"{name}: routing_us {path['routing_us']}")
        routing = sum(st["time_us"] for st in path["stages"] if st["stage"] == "routing")
        if abs(routing - path["routing_us"]) > 1e-6 * max(1.0, routing):
            fail(f"{name}: routing_us {path['routing_us']} is not its stages' {routing}")
        total = sum(st["time_us"] for st in path["stages"])
        if abs(total - path["total_us"]) > 1e-6 * total:
            fail(f"{name}: stages sum to {total}, total_us {path['total_us']}")
    sw = [st["kernel"] for st in p["software"]["stages"]]
    if sw[:2] != ["moe_router_gemm", "moe_router_topk"]:
        fail(f"software kernels {sw}: not the router first")
    if "sort" not in [st["stage"] for st in p["software"]["stages"]] or not p["software"]["sort_us"] > 0:
        fail("software path without its sort")
    tdm = [st["kernel"] for st in p["tdm"]["stages"]]
    if tdm[:2] != ["tdm_router_gemm", "tdm_routing"]:
        fail(f"tdm kernels {tdm}: not the unit's gate GEMM and routing stage first")
    if "sort" in [st["stage"] for st in p["tdm"]["stages"]] or p["tdm"]["sort_us"] != 0:
        fail("the TDM path still runs a sort kernel")
    for line in ("routing ", "(the unit routes and sorts in hardware)"):
        if line not in text:
            fail(f"text summary lacks {line!r}:\n{text}")
    with open(os.path.join(out, "trace.json")) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e.get("name") for e in events if e.get("ph") == "X"}
    for want in ("routing: moe_router_gemm", "routing: moe_router_topk", "routing: tdm_router_gemm",
                 "routing: tdm_routing", "tdm_routing"):
        if want not in names:
            fail(f"trace has no slice {want!r}")
    procs = {e.get("args", {}).get("name") for e in events if e.get("ph") == "M"}
    if not any(n and n.endswith("tdm_router") for n in procs):
        fail(f"trace has no tdm_router track: {sorted(n for n in procs if n)}")
    print(f"software routing {p['software']['routing_us']:.2f} us + sort {p['software']['sort_us']:.2f} us; "
          f"tdm routing {p['tdm']['routing_us']:.2f} us")


def given(scenario):
    timed = paths_of(run(scenario, "timed")[0])
    s, text, _ = run(with_key(scenario, "  router_stage: given\n", "given"), "given")
    p = paths_of(s)
    if "routing" in [st["stage"] for st in p["software"]["stages"]] or p["software"]["routing_us"] != 0:
        fail("router_stage given: the software path still routes")
    tdm = [st["kernel"] for st in p["tdm"]["stages"]]
    if tdm[0] != "tdm_routing" or "tdm_router_gemm" in tdm:
        fail(f"router_stage given: TDM kernels {tdm}")
    if not 0 < p["tdm"]["routing_us"] < timed["tdm"]["routing_us"]:
        fail(f"router_stage given: TDM routing {p['tdm']['routing_us']} us, timed {timed['tdm']['routing_us']} us")
    if "routing.router_stage given" not in text:
        fail("text summary does not say the router's output is given")
    print(f"given: tdm routing (sort alone) {p['tdm']['routing_us']:.3f} us; "
          f"timed {timed['tdm']['routing_us']:.3f} us")


def sweep(scenario):
    f = os.path.join(WORK, "routing-sweep.yaml")
    # oat: the base point (the scenario as it is: 64 items a clock, 100ns, timed; at 64 tokens the logits' read hides the pipeline down to a few items a clock), then
    # each axis's values one at a time.
    open(f, "w").write(f"kind: sweep\nname: routing-keys\nscenario: {os.path.abspath(scenario)}\nmode: oat\n"
                       "axes:\n"
                       "  machine.tdm.routing_scores_per_clock: [1, 64]\n"
                       "  machine.tdm.routing_latency: [100ns, 2us]\n"
                       "  scenario.routing.router_stage: [timed, given]\n")
    out = os.path.join(WORK, "sweep")
    tdmsim(["sweep", f, "--output", out, "--quiet", "--force"])
    rows = [json.loads(l) for l in open(os.path.join(out, "results.jsonl")) if l.strip()]
    by = {}
    for r in rows:
        if r["path"] != "tdm":
            continue
        key = tuple(sorted((k, str(v)) for k, v in r["inputs"].items()))
        by[key] = r["metrics"]["routing_us"]
    base = by.get(())
    if base is None:
        fail(f"no base point in {list(by)}")
    for axis, same, other in (("machine.tdm.routing_scores_per_clock", "64", "1"),
                              ("machine.tdm.routing_latency", "100ns", "2us"),
                              ("scenario.routing.router_stage", "timed", "given")):
        at = {dict(k).get(axis): v for k, v in by.items() if axis in dict(k)}
        if same not in at or other not in at:
            fail(f"{axis}: points {at}")
        if abs(at[same] - base) > 1e-6 * base:
            fail(f"{axis} {same} (the base's value): TDM routing_us {at[same]}, base {base}")
        if abs(at[other] - base) < 1e-3:
            fail(f"{axis} {other}: TDM routing_us {at[other]} equals the base's {base}")
        print(f"{axis}: {same} {base:.3f} us -> {other} {at[other]:.3f} us")
    with open(os.path.join(out, "results.csv")) as fh:
        header = next(csv.reader(fh))
    if "routing_us" not in header:
        fail(f"results.csv has no routing_us column: {header}")


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    TDMSIM, WORK, MODE, SCENARIO = sys.argv[1:5]
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    if MODE == "both":
        both(SCENARIO, sys.argv[5] if len(sys.argv) > 5 else None)
    elif MODE == "given":
        given(SCENARIO)
    elif MODE == "sweep":
        sweep(SCENARIO)
    else:
        sys.exit(__doc__)
