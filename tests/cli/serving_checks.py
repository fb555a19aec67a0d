#!/usr/bin/env python3
"""Request streams end to end (`tdmsim run` on a scenario with serving:; CTest serving.*).

Modes (SCENARIO: a shipped one-layer scenario on a TDM machine, used as `base:` of
streams written here with every serving: key they rely on):
  stream   both paths on 10 Poisson requests: every request in one batch, FIFO, the
           batching rule re-derived here from the arrivals and service times, batch
           limits, latency = wait + service, the summary's percentiles recomputed from
           requests.csv; one batch's service equals `tdmsim run` of that batch
           (tokens, seed + first request) on its own; the trace has the batches
  same     the same scenario twice (software path): byte-identical CSVs and summary
           percentiles; another seed gives other arrivals
  draws    fixed arrivals far apart, one token each, timeout 0: every batch is one
           request and waits nothing (latency = service), and draws_per_size 1
           simulates one layer for all; layers 2 makes each batch two layers' sum
  trace    an arrival trace: its times and tokens are the requests'; a bad line
           exits 2 naming the trace's file and line
  refuse   keys that would change nothing, or not fit, exit 2 naming file, line and
           key; options and commands that take one layer refuse a stream

Usage: serving_checks.py TDMSIM WORKDIR MODE SCENARIO"""
import csv
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402


write = tdmsimtools.write_text


def scenario(work, base, name, serving, extra=""):
    return write(os.path.join(work, name + ".yaml"),
                 f"kind: scenario\nbase: {base}\nname: {name}\n{extra}serving:\n" +
                 "".join(f"  {k}: {v}\n" for k, v in serving.items()))


def run(tdmsim, sc, out, *args):
    tdmsimtools.expect_exit(tdmsim, "run", sc, "--output", out, "--force", "--quiet", *args)
    s = tdmsimtools.read_summary(out)
    with open(os.path.join(out, "requests.csv")) as f:
        reqs = list(csv.DictReader(f))
    with open(os.path.join(out, "batches.csv")) as f:
        batches = list(csv.DictReader(f))
    return s, reqs, batches


def close(a, b, what, tol=1e-5):
    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=tol), f"{what}: {a!r} != {b!r}"


def nearest_rank(v, q):
    v = sorted(v)
    k = max(1, math.ceil(q * len(v)))
    return v[min(len(v), k) - 1]


def check_stream(s, reqs, batches, max_batch, max_tokens, timeout):
    """The queue's invariants and its batching rule, re-derived per path."""
    paths = [p["path"] for p in s["paths"]]
    arrival = [float(r["arrival_us"]) for r in reqs]
    tokens = [int(r["tokens"]) for r in reqs]
    n = len(reqs)
    assert arrival == sorted(arrival), "arrivals in order"
    for pi, path in enumerate(paths):
        bs = [b for b in batches if b["path"] == path]
        assert bs, path
        nxt, free = 0, 0.0
        for b in bs:
            first, count, tok = int(b["first_request"]), int(b["requests"]), int(b["tokens"])
            start, service, end = float(b["start_us"]), float(b["service_us"]), float(b["end_us"])
            assert first == nxt, f"{path}: batch {b['batch']} starts at request {first}, expected {nxt} (FIFO)"
            assert count >= 1 and (max_batch == 0 or count <= max_batch), b
            assert tok == sum(tokens[first:first + count]) and tok <= max_tokens, b
            assert service > 0, b
            close(end, start + service, "end = start + service")
            # The rule: start = max(GPU free, min(oldest + timeout, when the batch is full)).
            j, t = first, 0
            while j < n and (max_batch == 0 or j - first < max_batch) and t + tokens[j] <= max_tokens:
                t += tokens[j]
                j += 1
            full = math.inf
            if (max_batch and j - first == max_batch) or t == max_tokens:
                full = arrival[j - 1]
            elif j < n:
                full = arrival[j]
            expect = max(free, min(arrival[first] + timeout, full))
            close(start, expect, f"{path}: batch {b['batch']} start")
            k = first
            while k < j and arrival[k] <= start + 1e-9:
                k += 1
            assert count == k - first, f"{path}: batch {b['batch']} holds {count}, expected {k - first}"
            nxt, free = first + count, end
        assert nxt == n, f"{path}: {nxt} of {n} requests served"
        lat, wait = [], []
        for r in reqs:
            b = bs[int(r[f"{path}_batch"])]
            assert int(b["first_request"]) <= int(r["request"]) < int(b["first_request"]) + int(b["requests"])
            close(float(r[f"{path}_wait_us"]), float(b["start_us"]) - float(r["arrival_us"]), "wait")
            close(float(r[f"{path}_latency_us"]), float(b["end_us"]) - float(r["arrival_us"]), "latency")
            assert float(r[f"{path}_wait_us"]) >= 0
            lat.append(float(r[f"{path}_latency_us"]))
            wait.append(float(r[f"{path}_wait_us"]))
        L = s["paths"][pi]["latency_us"]
        for q, key in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
            close(L[key], nearest_rank(lat, q), f"{path} latency {key}", tol=2e-6)
        close(L["mean"], sum(lat) / n, f"{path} latency mean", tol=1e-4)
        close(s["paths"][pi]["wait_us"]["p50"], nearest_rank(wait, 0.5), f"{path} wait p50", tol=2e-6)
        assert s["paths"][pi]["batches"] == len(bs)
    return paths


def mode_stream(tdmsim, work, base):
    cfg = {"arrival": "poisson", "interarrival": "3us", "requests": 10, "request_tokens": 1,
           "request_tokens_max": 6, "max_batch": 4, "batch_timeout": "5us"}
    sc = scenario(work, base, "stream", cfg, extra="tokens: 16\nseed: 5\n")
    out = os.path.join(work, "out")
    s, reqs, batches = run(tdmsim, sc, out, "--trace")
    assert len(reqs) == 10
    paths = check_stream(s, reqs, batches, 4, 16, 5.0)
    assert paths == ["software", "tdm"], paths
    for p in s["paths"]:
        assert p["layers_simulated"] == p["batches"], p  # draws_per_size 0: every batch its own draw
    r = s["tdm_vs_software"]
    close(r["p99_latency_ratio"], s["paths"][0]["latency_us"]["p99"] / s["paths"][1]["latency_us"]["p99"], "ratio")
    # One batch's service is that batch's layer run on its own: tokens, seed + first request.
    b = [x for x in batches if x["path"] == "software"][-1]
    one = write(os.path.join(work, "one.yaml"),
                f"kind: scenario\nbase: {base}\nname: one\ntokens: {b['tokens']}\nseed: {5 + int(b['first_request'])}\n"
                "path: software\nserving: ~\n")
    alone = tdmsimtools.run(tdmsim, one, os.path.join(work, "one"), path="software")
    close(float(b["service_us"]), alone["paths"][0]["total_us"], "batch service = the layer alone", tol=1e-4)
    with open(os.path.join(out, "trace.json")) as f:
        trace = json.load(f)
    slices = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert len(slices) == len(batches), (len(slices), len(batches))
    with open(os.path.join(out, "config.json")) as f:
        cfgj = json.load(f)
    assert cfgj["scenario"]["serving"]["max_batch"] == 4, cfgj["scenario"]["serving"]


def mode_same(tdmsim, work, base):
    cfg = {"arrival": "poisson", "interarrival": "2us", "requests": 6, "request_tokens": 2, "max_batch": 3}
    sc = scenario(work, base, "same", cfg, extra="tokens: 8\npath: software\n")
    a = os.path.join(work, "a")
    b = os.path.join(work, "b")
    sa, _, _ = run(tdmsim, sc, a)
    sb, _, _ = run(tdmsim, sc, b)
    for f in ("requests.csv", "batches.csv"):
        with open(os.path.join(a, f)) as x, open(os.path.join(b, f)) as y:
            assert x.read() == y.read(), f"{f} differs between two runs"
    assert sa["paths"][0]["latency_us"] == sb["paths"][0]["latency_us"]
    other = scenario(work, base, "other", cfg, extra="tokens: 8\npath: software\nseed: 99\n")
    _, ra, _ = run(tdmsim, sc, a)
    _, ro, _ = run(tdmsim, other, os.path.join(work, "c"))
    assert [r["arrival_us"] for r in ra] != [r["arrival_us"] for r in ro], "another seed, other arrivals"


def mode_draws(tdmsim, work, base):
    cfg = {"arrival": "fixed", "interarrival": "1ms", "requests": 4, "request_tokens": 1, "draws_per_size": 1}
    sc = scenario(work, base, "draws", cfg, extra="tokens: 8\npath: software\n")
    s, reqs, batches = run(tdmsim, sc, os.path.join(work, "d1"))
    check_stream(s, reqs, batches, 0, 8, 0.0)
    p = s["paths"][0]
    assert p["batches"] == 4 and p["layers_simulated"] == 1, p
    services = {float(b["service_us"]) for b in batches}
    assert len(services) == 1, services  # one draw for every batch of one token
    for r in reqs:
        assert float(r["software_wait_us"]) == 0.0, r
        close(float(r["software_latency_us"]), float(batches[0]["service_us"]), "latency = service")
    close(float(reqs[3]["arrival_us"]), 3000.0, "fixed arrivals 1 ms apart")
    # Two layers a batch, each its own draw (draws_per_size 0): the service is their sum.
    cfg2 = dict(cfg, draws_per_size=0, layers=2, requests=2)
    s2, _, b2 = run(tdmsim, scenario(work, base, "layers", cfg2, extra="tokens: 8\npath: software\n"),
                    os.path.join(work, "d2"))
    assert s2["paths"][0]["layers_simulated"] == 4, s2["paths"][0]
    lay = s2["paths"][0]["layer_us"]
    assert lay["min"] > 0 and float(b2[0]["service_us"]) >= 2 * lay["min"] - 1e-6, (lay, b2[0])
    assert float(b2[0]["service_us"]) <= 2 * lay["max"] + 1e-6


def mode_trace(tdmsim, work, base):
    tr = write(os.path.join(work, "arrivals.csv"), "arrival_us,tokens\n0,2\n0.5,1\n# late\n40,3\n")
    sc = scenario(work, base, "traced", {"arrival": "trace", "trace": "arrivals.csv", "max_batch": 2},
                  extra="tokens: 8\npath: software\n")
    s, reqs, batches = run(tdmsim, sc, os.path.join(work, "t"))
    assert [(float(r["arrival_us"]), int(r["tokens"])) for r in reqs] == [(0.0, 2), (0.5, 1), (40.0, 3)], reqs
    check_stream(s, reqs, batches, 2, 8, 0.0)
    write(tr, "0,2\n0.5,9\n")
    p = tdmsimtools.expect_exit(tdmsim, "run", sc, "--quiet", rc=2)
    assert "arrivals.csv:2: arrival trace: a request of 9 tokens" in p.stderr, p.stderr


def refused(tdmsim, args, *needles):
    p = tdmsimtools.expect_exit(tdmsim, *args, rc=2)
    for n in needles:
        assert n in p.stderr, f"stderr lacks {n!r}:\n{p.stderr}"


def mode_refuse(tdmsim, work, base):
    good = {"arrival": "poisson", "interarrival": "3us", "requests": 4}
    cases = [
        ({"arrival": "trace", "trace": "x.csv", "interarrival": "3us"}, "serving.interarrival", "leave it out"),
        (dict(good, request_tokens_max=99), "serving.request_tokens_max", "does not fit a batch"),
        ({"arrival": "fixed", "requests": 4}, "serving.interarrival", "needs a time between arrivals above 0"),
        ({"arrival": "poisson", "interarrival": "3us"}, "serving.requests", "needs a number of requests, at least 1"),
        (dict(good, trace="x.csv"), "serving.trace", "only with arrival: trace"),
        (dict(good, batch_timout="3us"), "serving.batch_timout", "unknown key"),
    ]
    for i, (cfg, key, what) in enumerate(cases):
        sc = scenario(work, base, f"bad{i}", cfg, extra="tokens: 8\n")
        p = tdmsimtools.expect_exit(tdmsim, "config", "validate", sc, rc=2)
        assert f"bad{i}.yaml:" in p.stderr and key in p.stderr and what in p.stderr, (cfg, p.stderr)
        out = os.path.join(work, f"bad{i}-out")
        tdmsimtools.expect_exit(tdmsim, "run", sc, "--output", out, "--quiet", rc=2)
        assert not os.path.exists(out), "a refused run writes nothing"
    # A routing trace fixes one layer's tokens.
    sc = scenario(work, base, "rtrace", good, extra="tokens: 8\nrouting: {source: trace, trace: r.npy}\n")
    refused(tdmsim, ["config", "validate", sc], "routing.source", "request stream")
    ok = scenario(work, base, "ok", good, extra="tokens: 8\n")
    for extra in (["--repeat", "2"], ["--gpus", "2"], ["--one-gpu"]):
        refused(tdmsim, ["run", ok, "--quiet", *extra], "a request stream")
    refused(tdmsim, ["emulate", ok, "--output", os.path.join(work, "emu")], "ok.yaml:", "serving:", "tdmsim emulate")
    assert not os.path.exists(os.path.join(work, "emu"))


def main():
    tdmsim, work, mode, base = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    {"stream": mode_stream, "same": mode_same, "draws": mode_draws, "trace": mode_trace,
     "refuse": mode_refuse}[mode](tdmsim, work, os.path.abspath(base))
    print(f"serving {mode}: ok")


if __name__ == "__main__":
    main()
