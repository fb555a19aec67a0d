#!/usr/bin/env python3
"""Expert-parallel layers end to end (`tdmsim run --gpus N`, parallel.ep; CTest ep.*).

Modes:
  one SCENARIO        --gpus 1 gives the single-GPU run's times bit for bit
  layer SCENARIO      --gpus 4 on a hot-expert draw: the slowest-rank rule and the
                      per-rank identity compute + own communication + wait = layer; the
                      ranks' picks partition the draw; the dispatch and combine bytes are
                      the token matrix x hidden x bytes and sent == received; one trace
                      track per GPU; the same seed gives a byte-identical summary
  tdm SCENARIO        both paths on a TDM machine: the rule and conservation on each
  placement SCENARIO  load_aware with redundant copies lowers the most loaded GPU's
                      picks and the layer time against contiguous on the same draw
  sweep SCENARIO      a sweep over parallel.ep gives identical results.csv at -j1 and -j2,
                      with the expert-parallel columns filled for ep > 1 only
  refuse SCENARIO     impossible splits exit 2 naming the file, line and key (or --gpus)

Usage: ep_checks.py TDMSIM WORKDIR MODE SCENARIO"""
import csv
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run(tdmsim, args, out):
    tdmsimtools.expect_exit(tdmsim, "run", *args, "--output", out, "--force", "--quiet")
    return tdmsimtools.read_summary(out)


def hot_scenario(work, base, name, extra=""):
    # Four hot experts (0..3) take 60% of the picks: all on GPU 0 when contiguous.
    return write(os.path.join(work, name + ".yaml"),
                 f"base: {base}\nname: {name}\ntokens: 64\npath: software\n"
                 f"routing: {{source: hot, hot_experts: [0, 1, 2, 3], hot_fraction: 0.6}}\n{extra}")


def expect_refused(tdmsim, work, text, args, what, key, words, key_line):
    """Runs the scenario `text` (with `args`): exit 2, `key` and `words` on stderr, nothing
    written, and (given `key_line`, a test of a line's text) file:line of the first such line."""
    sc = write(os.path.join(work, "bad.yaml"), text)
    out = os.path.join(work, "bad-out")
    p = tdmsimtools.expect_exit(tdmsim, "run", sc, *args, "--output", out, rc=2)
    assert key in p.stderr and words in p.stderr, f"{what}: {p.stderr}"
    if key_line is not None:
        line = 1 + [i for i, text in enumerate(text.splitlines()) if key_line(text)][0]
        assert f"bad.yaml:{line}:" in p.stderr, f"{what}: no line {line} in {p.stderr}"
    assert not os.path.exists(out), f"{what}: wrote {out}"
    print(f"{what}: {p.stderr.strip().splitlines()[0]}")


def close(a, b, what, rel=1e-9):
    assert math.isclose(a, b, rel_tol=rel, abs_tol=1e-9), f"{what}: {a!r} != {b!r}"


def check_layer(s, top_k, hidden, act_bytes, path=0):
    layer = s["layer"]
    ep = layer["ep"]
    n = ep["gpus"]
    p = s["paths"][path]
    pe = p["ep"]
    ranks = pe["ranks"]
    assert len(ranks) == n and pe["gpus"] == n
    total = p["total_us"]
    # The slowest-rank rule.
    want = pe["before_dispatch_max_us"] + pe["dispatch"]["time_us"] + pe["after_dispatch_max_us"] + \
        pe["combine"]["time_us"]
    close(total, want, "layer = routing + dispatch + experts + combine")
    assert pe["before_dispatch_max_us"] == max(r["before_dispatch_us"] for r in ranks)
    assert pe["after_dispatch_max_us"] == max(r["after_dispatch_us"] for r in ranks)
    slow = max(range(n), key=lambda g: (ranks[g]["compute_us"], -g))
    assert pe["slowest_rank"] == slow, (pe["slowest_rank"], slow)
    for r in ranks:
        assert r["compute_us"] <= total
        close(r["compute_us"], r["before_dispatch_us"] + r["after_dispatch_us"], f"gpu {r['rank']} compute", 1e-6)
        close(r["compute_us"] + r["dispatch"]["us"] + r["combine"]["us"] + r["wait_us"], total,
              f"gpu {r['rank']}: compute + communication + wait", 1e-6)
        assert r["metrics"]["total_us"] == r["compute_us"]
    # Shares: every routed pick on exactly one GPU; tokens owned split the batch.
    assert sum(r["picks"] for r in ep["ranks"]) == layer["tokens"] * top_k
    assert sum(r["own_tokens"] for r in ep["ranks"]) == layer["tokens"]
    # Traffic: the token matrix x hidden x bytes; conservation.
    m = ep["dispatch_tokens"]
    for g in range(n):
        off = sum(m[g][d] for d in range(n) if d != g)
        inn = sum(m[s_][g] for s_ in range(n) if s_ != g)
        assert ranks[g]["dispatch"]["sent_bytes"] == off * hidden * act_bytes
        assert ranks[g]["dispatch"]["received_bytes"] == inn * hidden * act_bytes
        assert ranks[g]["combine"]["sent_bytes"] == inn * hidden * 2
        assert ranks[g]["combine"]["received_bytes"] == off * hidden * 2
        # A GPU computes on its own tokens and those it receives.
        assert ranks[g]["tokens"] == ranks[g]["own_tokens"] + ranks[g]["received_tokens"]
    for c in ("dispatch", "combine"):
        assert sum(r[c]["sent_bytes"] for r in ranks) == sum(r[c]["received_bytes"] for r in ranks), c
    return total


def main():
    tdmsim, work, mode, scenario = sys.argv[1], sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "one":
        sc = hot_scenario(work, scenario, "one")
        single = run(tdmsim, [sc], os.path.join(work, "single"))
        one = run(tdmsim, [sc, "--gpus", "1"], os.path.join(work, "gpus1"))
        a, b = single["paths"][0], one["paths"][0]
        print(f"single GPU {a['total_us']!r} us, --gpus 1 {b['total_us']!r} us")
        assert a["total_us"] == b["total_us"], "--gpus 1 differs from the single-GPU run"
        assert a["stages"] == b["stages"] and a["floor"] == b["floor"]
        assert b["ep"]["gpus"] == 1 and b["ep"]["dispatch"]["time_us"] == 0
        # --one-gpu: GPU 0's share of an expert-parallel scenario, as one GPU
        # (how the H200 validation compares its one-GPU measurement of an EP layer).
        sc4 = hot_scenario(work, scenario, "one4", "parallel: {ep: 4}\n")
        share = run(tdmsim, [sc4, "--one-gpu"], os.path.join(work, "share"))
        layer4 = run(tdmsim, [sc4], os.path.join(work, "layer4"))
        assert "ep" not in share["paths"][0] and "ep" in layer4["paths"][0]
        assert share["layer"]["block_m"] is not None
        print(f"--one-gpu {share['paths'][0]['total_us']!r} us (GPU 0's share), the 4-GPU layer "
              f"{layer4['paths'][0]['total_us']!r} us")
        p = tdmsimtools.expect_exit(tdmsim, "run", sc4, "--one-gpu", "--gpus", "2", "--output",
                                    os.path.join(work, "both-flags"), rc=2)
        assert "--one-gpu" in p.stderr and "--gpus" in p.stderr, p.stderr
    elif mode == "layer":
        sc = hot_scenario(work, scenario, "layer")
        out = os.path.join(work, "a")
        tdmsimtools.expect_exit(tdmsim, "run", sc, "--gpus", "4", "--output", out, "--trace", "--quiet")
        s = tdmsimtools.read_summary(out)
        cfg = json.load(open(os.path.join(out, "config.json")))
        top_k, hidden = cfg["model"]["top_k"], cfg["model"]["hidden_size"]
        total = check_layer(s, top_k, hidden, 2)
        pe = s["paths"][0]["ep"]
        print(f"4 GPUs: {total:.2f} us, slowest gpu {pe['slowest_rank']}, dispatch {pe['dispatch']['time_us']:.2f} us, "
              f"combine {pe['combine']['time_us']:.2f} us, compute max/mean {pe['compute_max_over_mean']:.2f}")
        # The hot experts all live on GPU 0 (contiguous): it is the slowest.
        assert pe["slowest_rank"] == 0
        tr = json.load(open(os.path.join(out, "trace.json")))
        tracks = {e["args"]["name"] for e in tr["traceEvents"] if e.get("name") == "thread_name"}
        assert tracks == {f"gpu[{g}]" for g in range(4)}, tracks
        # Same seed, same bytes.
        again = os.path.join(work, "b")
        tdmsimtools.expect_exit(tdmsim, "run", sc, "--gpus", "4", "--output", again, "--trace", "--quiet")
        s2 = tdmsimtools.read_summary(again)
        s.pop("simulation_wall_s")
        s2.pop("simulation_wall_s")
        assert s == s2, "a second run of the same seed differs"
        for f in ("stats.json", "trace.json"):
            assert open(os.path.join(out, f), "rb").read() == open(os.path.join(again, f), "rb").read(), f
    elif mode == "tdm":
        # Both paths of a TDM machine's scenario: each GPU's TDM unit runs its own
        # share's descriptors; the same rule and conservation on each path.
        out = os.path.join(work, "tdm")
        s = run(tdmsim, [scenario, "--gpus", "4", "--path", "both"], out)
        cfg = json.load(open(os.path.join(out, "config.json")))
        assert [p["path"] for p in s["paths"]] == ["software", "tdm"]
        for i, p in enumerate(s["paths"]):
            t = check_layer(s, cfg["model"]["top_k"], cfg["model"]["hidden_size"], 2, path=i)
            print(f"{p['path']}: 4 GPUs {t:.2f} us")
        # The collectives carry the same tokens on both paths: the same time.
        assert s["paths"][0]["ep"]["dispatch"] == s["paths"][1]["ep"]["dispatch"]
        assert abs(s["tdm_speedup"] - s["paths"][0]["total_us"] / s["paths"][1]["total_us"]) < 1e-12
    elif mode == "placement":
        res = {}
        for name, extra in (("contiguous", ""),
                            ("load_aware", "parallel: {ep: 4, placement: load_aware, redundant_experts: 4}\n")):
            sc = hot_scenario(work, scenario, name, extra)
            s = run(tdmsim, [sc, "--gpus", "4"], os.path.join(work, name))
            res[name] = (max(r["picks"] for r in s["layer"]["ep"]["ranks"]), s["paths"][0]["total_us"])
            if name == "load_aware":
                experts = sorted(e for r in s["layer"]["ep"]["ranks"] for e in r["experts"])
                assert len(experts) == s["layer"]["ep"]["slots_per_gpu"] * 4
                assert set(experts) == set(range(128)), "an expert has no GPU"
        print(", ".join(f"{k}: max picks per GPU {v[0]}, layer {v[1]:.2f} us" for k, v in res.items()))
        assert res["load_aware"][0] < res["contiguous"][0]
        assert res["load_aware"][1] < res["contiguous"][1]
    elif mode == "sweep":
        sc = hot_scenario(work, scenario, "ep-base")
        sw = write(os.path.join(work, "sweep.yaml"),
                   f"kind: sweep\nname: ep-sweep\nscenario: {sc}\nmode: grid\naxes:\n  scenario.parallel.ep: [1, 2]\n")
        tables = []
        for j in ("1", "2"):
            out = os.path.join(work, "sweep-j" + j)
            tdmsimtools.expect_exit(tdmsim, "sweep", sw, "--output", out, "-j", j, "--quiet")
            tables.append(open(os.path.join(out, "results.csv"), "rb").read())
        assert tables[0] == tables[1], "results.csv differs between -j1 and -j2"
        rows = list(csv.DictReader(open(os.path.join(work, "sweep-j1", "results.csv"))))
        by_ep = {r["scenario.parallel.ep"]: r for r in rows}
        assert by_ep["1"]["gpus"] == "" and by_ep["2"]["gpus"] == "2", by_ep
        assert float(by_ep["2"]["ep_dispatch_us"]) > 0 and float(by_ep["2"]["ep_combine_us"]) > 0
        print(f"sweep: ep 1 {by_ep['1']['total_us']} us, ep 2 {by_ep['2']['total_us']} us")
    elif mode == "idle":
        # Every pick on experts 0 and 1, so GPU 1 (experts 4-7 of 8) gets none: it
        # still routes and sorts its own tokens (and clears their output where the
        # combine is fp32), and runs no expert kernel
        # (`scenario` here is a model file: the seed's 8-expert top-2 layer).
        for machine, path in (("h200", "software"), ("mi500x-tdm", "both")):
            sc = write(os.path.join(work, f"idle-{machine}.yaml"),
                       f"name: idle\nmachine: {machine}\nmodel: {scenario}\ntokens: 4\npath: {path}\n"
                       "routing: {source: hot, hot_experts: [0, 1], hot_fraction: 1.0}\nparallel: {ep: 2}\n")
            s = run(tdmsim, [sc], os.path.join(work, "idle-" + machine))
            cfg = json.load(open(os.path.join(work, "idle-" + machine, "config.json")))
            assert [r["picks"] for r in s["layer"]["ep"]["ranks"]] == [8, 0], s["layer"]["ep"]["ranks"]
            for i, p in enumerate(s["paths"]):
                check_layer(s, cfg["model"]["top_k"], cfg["model"]["hidden_size"], 2, path=i)
                idle = p["ep"]["ranks"][1]["metrics"]
                assert {st["stage"] for st in idle["stages"]} <= {"routing", "zero_out", "sort"}, idle["stages"]
                assert p["ep"]["slowest_rank"] == 0
                print(f"{machine} {p['path']}: GPU 1 idle, {idle['total_us']:.2f} us of routing and sort; "
                      f"layer {p['total_us']:.2f} us")
            # GPU 0's share alone (--one-gpu) when the picks are all on GPU 1.
            hot45 = write(os.path.join(work, f"idle45-{machine}.yaml"),
                          open(sc).read().replace("[0, 1]", "[4, 5]"))
            share = run(tdmsim, [hot45, "--one-gpu"], os.path.join(work, "idle45-" + machine))
            assert share["layer"]["rows"] == 0 and share["layer"]["padding_waste"] == 0
            for p in share["paths"]:
                assert {st["stage"] for st in p["stages"]} <= {"routing", "zero_out", "sort"}, p["stages"]
            if machine == "mi500x-tdm":  # no descriptor to write: refused, not an empty file
                stream = os.path.join(work, "idle.tdmm")
                r = tdmsimtools.expect_exit(tdmsim, "run", hot45, "--one-gpu", "--write-descriptors", stream, rc=2)
                assert "nothing to write" in r.stderr and not os.path.exists(stream), r.stderr
    elif mode == "refuse":
        cases = [
            ("ep: 3", "parallel: {ep: 3}\n", [], "parallel.ep", "do not split evenly"),
            ("redundant not a multiple", "parallel: {ep: 4, placement: load_aware, redundant_experts: 2}\n", [],
             "parallel.redundant_experts", "do not split evenly"),
            ("redundant without load_aware", "parallel: {ep: 4, redundant_experts: 4}\n", [],
             "parallel.redundant_experts", "load_aware"),
            ("placement with one GPU", "parallel: {placement: round_robin}\n", [], "parallel.placement",
             "changes nothing"),
            ("--gpus 3", "", ["--gpus", "3"], "--gpus 3", "do not split evenly"),
            ("fewer tokens than GPUs", "tokens: 2\nparallel: {ep: 4}\n", [], "tokens", "fewer tokens"),
        ]
        for what, extra, args, key, words in cases:
            expect_refused(tdmsim, work, f"base: {scenario}\nname: bad\npath: software\n{extra}", args, what, key,
                           words, None if args else
                           lambda l: key.split(".")[-1] + ":" in l or (key == "parallel.ep" and "ep:" in l))
    else:
        sys.exit(f"unknown mode {mode}")
    print("ok")


if __name__ == "__main__":
    main()
