#!/usr/bin/env python3
"""Tenants on the partitions of one GPU (`kind: tenants`; CTest tenants.*; docs/partitions.md).

Modes:
  example  the shipped two-tenant example (MI300X DPX/NPS1, software path): each tenant's
           time alone and together, the interference figure as together / alone - 1, both
           tenants slowed by the shared HBM/MALL
  single   one tenant on partition 0 of the DPX MI300X: its time alone is `tdmsim run
           SCENARIO --machine mi300x-dpx` exactly, and together (the rest idle) the same
  tdm      two decode tenants on a DPX mi500x-tdm, path both: both paths timed alone and
           together, and a trace with a track group per partition
  nps4     three decode tenants on a CPX/NPS4 MI300X, partitions 0, 1 and 2: the two above
           memory quarter 0 slow each other down, the one on quarter 1 times within 0.1% of alone
  fabric   two decode tenants on a DPX/NPS1 MI300X whose IOD links (memory.fabric.iods) are tight
           (1 TB/s): slower alone and together than without the links, each port's busy share in
           summary.json; with the shipped 5.4 TB/s and on a CPX/NPS4 pair the links change nothing
  same     two decode tenants run twice: summary.json, stats.json and config.json byte for byte
  refuse   what does not fit exits 2 naming file, line and key, writing nothing

Usage: tenants_checks.py TDMSIM WORKDIR MODE REPO"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

write = tdmsimtools.write_text


def scen(repo, name):
    return os.path.join(repo, "workloads", "scenarios", name + ".yaml")


def tenants_file(work, name, machine, scenarios, partitions=None, path=None, extra=""):
    text = f"kind: tenants\nname: {name}\nmachine: {machine}\nscenarios: [{', '.join(scenarios)}]\n"
    if partitions is not None:
        text += f"partitions: [{', '.join(map(str, partitions))}]\n"
    if path:
        text += f"path: {path}\n"
    return write(os.path.join(work, name + ".yaml"), text + extra)


def run(tdmsim, f, out, *extra):
    tdmsimtools.expect_exit(tdmsim, "run", f, "--output", out, "--force", "--quiet", *extra)
    return tdmsimtools.read_summary(out)


def check_figures(s, paths):
    assert s["paths"] == paths, s["paths"]
    for t in s["tenants"]:
        assert [p["path"] for p in t["paths"]] == paths, t
        for p in t["paths"]:
            a, b = p["alone_us"], p["together_us"]
            assert a > 0 and b > 0, p
            assert abs(p["interference"] - (b / a - 1.0)) < 1e-12, p
            assert abs(p["alone"]["total_us"] - a) < 1e-9, p
            assert p["together_stages"], p


def mode_example(tdmsim, work, repo):
    f = scen(repo, "mi300x-dpx-decode-prefill-tenants")
    s = run(tdmsim, f, os.path.join(work, "a"))
    check_figures(s, ["software"])
    assert s["partition"] == {"compute": "dpx", "memory": "nps1", "partitions": 2, "dies_per_partition": 4}, s
    assert [t["partition"] for t in s["tenants"]] == [0, 1], s
    for t in s["tenants"]:
        p = t["paths"][0]
        print(f"{t['scenario']} on partition {t['partition']}: alone {p['alone_us']:.2f} us, together "
              f"{p['together_us']:.2f} us, interference {100 * p['interference']:+.1f}%")
        # Both read their weights from the one HBM: each is slowed by the other.
        assert p["interference"] > 0.0, p
    # The shipped machine states its IODs: each port's bytes and busy share of the span.
    links = s["together"]["software"]["iod_links"]
    assert [l["iod"] for l in links] == [f"iod[{i}]" for i in range(4)], links
    for l in links:
        print(f"  {l['iod']}: {l['bytes'] / 1e9:.2f} GB, busy {100 * l['busy']:.0f}% of the span")
        assert l["bytes"] > 0 and 0.0 < l["busy"] <= 1.0, l
    with open(os.path.join(work, "a", "config.json")) as fh:
        cfg = json.load(fh)
    assert cfg["machine"]["partition"]["compute"] == "dpx", cfg["machine"]
    assert len(cfg["scenarios"]) == 2, cfg


def mode_single(tdmsim, work, repo):
    machine = os.path.join(repo, "workloads", "machines", "mi300x-dpx.yaml")
    sc = scen(repo, "qwen3-30b-a3b-512tok-bf16-mi300x")
    f = tenants_file(work, "one", machine, [sc], path="software")
    s = run(tdmsim, f, os.path.join(work, "one-out"))
    check_figures(s, ["software"])
    p = s["tenants"][0]["paths"][0]
    ref = tdmsimtools.run(tdmsim, sc, os.path.join(work, "ref"), path="software", machine=machine)
    print(f"alone {p['alone_us']} us, together {p['together_us']} us, tdmsim run {ref['paths'][0]['total_us']} us")
    assert p["alone_us"] == ref["paths"][0]["total_us"], (p["alone_us"], ref["paths"][0]["total_us"])
    assert p["together_us"] == p["alone_us"] and p["interference"] == 0.0, p


def mode_tdm(tdmsim, work, repo):
    f = decode_pair(work, repo, "both")
    out = os.path.join(work, "out")
    s = run(tdmsim, f, out, "--trace")
    check_figures(s, ["software", "tdm"])
    assert [t["partition"] for t in s["tenants"]] == [1, 0], s
    for t in s["tenants"]:
        for p in t["paths"]:
            print(f"partition {t['partition']} {p['path']}: alone {p['alone_us']:.2f} us, together "
                  f"{p['together_us']:.2f} us, interference {100 * p['interference']:+.1f}%")
    with open(os.path.join(out, "trace.json")) as fh:
        names = {e["args"]["name"] for e in json.load(fh)["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    for path in ("software", "tdm"):
        for part in (0, 1):
            assert any(n.startswith(f"{path}: gpu.partition[{part}].xcd[") for n in names), (path, part, names)
            assert any(n.startswith(f"stages partition[{part}]") for n in names), (part, names)


def decode_pair(work, repo, path):
    machine = write(os.path.join(work, "mi500x-tdm-dpx.yaml"),
                    f"kind: machine\nbase: {os.path.join(repo, 'workloads', 'machines', 'mi500x-tdm.yaml')}\n"
                    "name: mi500x-tdm-dpx\npartition:\n  compute: dpx\n")
    sc = scen(repo, "qwen3-30b-a3b-decode-mi500x-tdm")
    return tenants_file(work, "two-decode", machine, [sc, sc], partitions=[1, 0], path=path)


def mode_fabric(tdmsim, work, repo):
    machines = os.path.join(repo, "workloads", "machines")
    sc = scen(repo, "qwen3-30b-a3b-decode-mi500x-tdm")

    def machine(name, compute, memory, link):
        iods = f"  fabric:\n    iods:\n      count: 4\n      link_bandwidth: {link}\n" if link else ""
        return write(os.path.join(work, name + ".yaml"),
                     f"kind: machine\nbase: {os.path.join(machines, 'mi300x.yaml')}\nname: {name}\n"
                     f"partition:\n  compute: {compute}\n  memory: {memory}\n" + (f"memory:\n{iods}" if iods else ""))

    def pair(name, m, parts):
        s = run(tdmsim, tenants_file(work, name, m, [sc, sc], partitions=parts, path="software"),
                os.path.join(work, name + "-out"))
        check_figures(s, ["software"])
        return s

    def times(s):
        return [(t["paths"][0]["alone_us"], t["paths"][0]["together_us"]) for t in s["tenants"]]

    # Every key changes the model or is refused (exit 2, naming the key).
    for name, iods, what in (("one", "count: 1\n      link_bandwidth: 1TB/s", "must be at least 2"),
                             ("three", "count: 3\n      link_bandwidth: 1TB/s", "do not split evenly over 3 IODs"),
                             ("nobw", "count: 4", "missing required key 'link_bandwidth'")):
        f = write(os.path.join(work, f"bad-{name}.yaml"),
                  f"kind: machine\nbase: {os.path.join(machines, 'mi300x.yaml')}\nname: bad\n"
                  f"memory:\n  fabric:\n    iods:\n      {iods}\n")
        p = tdmsimtools.expect_exit(tdmsim, "config", "validate", f, rc=2)
        out = p.stdout + p.stderr
        assert "memory.fabric.iods." in out and what in out, (name, out)
    free = pair("free", machine("dpx-free", "dpx", "nps1", None), [0, 1])
    tight = pair("tight", machine("dpx-tight", "dpx", "nps1", "1TB/s"), [0, 1])
    shipped = pair("shipped", machine("dpx-shipped", "dpx", "nps1", "5.4TB/s"), [0, 1])
    assert "iod_links" not in free["together"]["software"], free["together"]
    for name, s in (("no IOD links", free), ("1 TB/s IOD links", tight), ("5.4 TB/s IOD links", shipped)):
        print(f"{name}: " + ", ".join(f"alone {a:.2f} us together {b:.2f} us" for a, b in times(s)))
    busy = [l["busy"] for l in tight["together"]["software"]["iod_links"]]
    print(f"1 TB/s ports busy: {', '.join(f'{100 * b:.0f}%' for b in busy)}")
    for (fa, fb), (ta, tb) in zip(times(free), times(tight)):
        # The tight links bind: slower alone, and more so together (both partitions' traffic
        # crosses every port).
        assert ta > 1.05 * fa and tb > 1.05 * fb, (fa, fb, ta, tb)
        assert tb - fb > ta - fa, (fa, fb, ta, tb)
    assert max(busy) > 0.5, busy
    # At the shipped 5.4 TB/s a decode pair's HBM-bound reads leave the ports mostly idle.
    for (fa, fb), (sa, sb) in zip(times(free), times(shipped)):
        assert abs(sa / fa - 1) < 0.01 and abs(sb / fb - 1) < 0.01, (fa, fb, sa, sb)
    # CPX/NPS4: partitions 0 and 2 keep their traffic on their own IODs: nothing crosses.
    n_free = pair("nps4-free", machine("cpx-nps4-free", "cpx", "nps4", None), [0, 2])
    n_tight = pair("nps4-tight", machine("cpx-nps4-tight", "cpx", "nps4", "1TB/s"), [0, 2])
    assert times(n_free) == times(n_tight), (times(n_free), times(n_tight))
    assert "iod_links" not in n_tight["together"]["software"], n_tight["together"]


def mode_same(tdmsim, work, repo):
    f = decode_pair(work, repo, "software")
    run(tdmsim, f, os.path.join(work, "a"))
    run(tdmsim, f, os.path.join(work, "b"))
    for name in ("summary.json", "stats.json", "config.json"):
        with open(os.path.join(work, "a", name), "rb") as x, open(os.path.join(work, "b", name), "rb") as y:
            assert x.read() == y.read(), name


def mode_nps4(tdmsim, work, repo):
    machine = write(os.path.join(work, "mi300x-cpx-nps4.yaml"),
                    f"kind: machine\nbase: {os.path.join(repo, 'workloads', 'machines', 'mi300x.yaml')}\n"
                    "name: mi300x-cpx-nps4\npartition:\n  compute: cpx\n  memory: nps4\n")
    sc = scen(repo, "qwen3-30b-a3b-decode-mi500x-tdm")
    f = tenants_file(work, "three-decode", machine, [sc, sc, sc], partitions=[0, 1, 2], path="software")
    s = run(tdmsim, f, os.path.join(work, "out"))
    check_figures(s, ["software"])
    assert [t["memory_pool"] for t in s["tenants"]] == [0, 0, 1], s
    for t in s["tenants"]:
        p = t["paths"][0]
        print(f"partition {t['partition']} (pool {t['memory_pool']}): alone {p['alone_us']:.2f} us, together "
              f"{p['together_us']:.2f} us, interference {100 * p['interference']:+.1f}%")
    # Partitions 0 and 1 share memory quarter 0; partition 2 has quarter 1 to itself (it
    # shares only SystemC's time with them: within 0.1% of alone, 0.02% when measured).
    assert s["tenants"][0]["paths"][0]["interference"] > 0.05 and s["tenants"][1]["paths"][0]["interference"] > 0.05, s
    assert abs(s["tenants"][2]["paths"][0]["interference"]) < 1e-3, s["tenants"][2]["paths"][0]


def mode_refuse(tdmsim, work, repo):
    machines = os.path.join(repo, "workloads", "machines")
    dpx = os.path.join(machines, "mi300x-dpx.yaml")
    sc = scen(repo, "mixtral-8x7b-64tok-bf16-mi300x")
    serving = scen(repo, "qwen3-30b-a3b-serving-mi500x-tdm")
    tile = os.path.join(repo, "tests", "data", "hardening", "hard-limits", "tile_does_not_fit.yaml")
    out = os.path.join(work, "never")
    cases = [
        (tenants_file(work, "three", dpx, [sc, sc, sc]), "scenarios", "3 tenants, but machine mi300x-dpx in dpx has 2"),
        (tenants_file(work, "outside", dpx, [sc], partitions=[2]), "partitions", "has partitions 0..1"),
        (tenants_file(work, "twice", dpx, [sc, sc], partitions=[1, 1]), "partitions", "given twice"),
        (tenants_file(work, "count", dpx, [sc, sc], partitions=[0]), "partitions", "gives 1 partitions for 2"),
        (tenants_file(work, "whole", os.path.join(machines, "mi300x.yaml"), [sc]), "machine", "no partition: section"),
        (tenants_file(work, "stream", dpx, [serving]), "scenarios", "serving: section"),
        (tenants_file(work, "unknown", dpx, [sc], extra="tokens: 64\n"), "tokens", "unknown key"),
    ]
    for f, key, what in cases:
        p = tdmsimtools.expect_exit(tdmsim, "run", f, "--output", out, rc=2)
        name = os.path.basename(f)
        assert f"{name}:" in p.stderr and key in p.stderr and what in p.stderr, (name, key, what, p.stderr)
        assert not os.path.exists(out), out
    # A tenant whose kernels do not fit a CU of its partition: refused before anything runs.
    f = tenants_file(work, "tile", dpx, [tile])
    p = tdmsimtools.expect_exit(tdmsim, "run", f, "--output", out, rc=2)
    assert "does not fit on a CU" in p.stderr, p.stderr
    assert not os.path.exists(out), out
    # Options a tenants run does not take.
    ok = tenants_file(work, "ok", dpx, [sc])
    for extra in (["--gpus", "2"], ["--repeat", "2"], ["--machine", "mi300x"]):
        p = tdmsimtools.expect_exit(tdmsim, "run", ok, "--output", out, *extra, rc=2)
        assert "tenants file" in p.stderr and extra[0] in p.stderr, (extra, p.stderr)
        assert not os.path.exists(out), out
    # Sweeps over a tenants file are refused at the sweep's scenario key.
    sweep = write(os.path.join(work, "sweep.yaml"),
                  f"kind: sweep\nname: s\nscenario: {ok}\naxes:\n  scenario.path: [software]\n")
    p = tdmsimtools.expect_exit(tdmsim, "sweep", sweep, "--output", out, rc=2)
    assert "sweep.yaml:" in p.stderr and "sweeps over tenants are not supported" in p.stderr, p.stderr
    assert not os.path.exists(out), out
    # config validate agrees with run.
    tdmsimtools.expect_exit(tdmsim, "config", "validate", ok)
    tdmsimtools.expect_exit(tdmsim, "config", "validate", cases[0][0], rc=2)


def main():
    tdmsim, work, mode, repo = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"example": mode_example, "single": mode_single, "tdm": mode_tdm, "same": mode_same, "fabric": mode_fabric,
     "nps4": mode_nps4, "refuse": mode_refuse}[mode](tdmsim, work, repo)
    print("ok")


if __name__ == "__main__":
    main()
