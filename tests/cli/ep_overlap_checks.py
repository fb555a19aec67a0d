#!/usr/bin/env python3
"""Expert-parallel options beyond the barrier layer (CTest ep.overlap, ep.gather, ep.tp,
ep.options_refused; docs/expert-parallel.md "Overlap", "Combine by all-gather",
"Tensor parallel inside experts").

Modes:
  overlap SCENARIO   overlap none given explicitly is the default run byte for byte;
                     overlap chunked: the micro-batches partition the batch (same bytes and
                     picks as none), its no_overlap_us is the none run's layer, the layer is
                     at most the micro-batches one after another and at least every rank's
                     compute, per rank compute + exposed communication + wait = layer, and
                     the trace has a compute and a communication track per GPU
  gather SCENARIO    combine all_gather on both paths of a TDM machine: the dispatch and the
                     ranks' compute are all_to_all's, every GPU sends its output rows to
                     every other (bytes), and the layer is no shorter than all_to_all's
  tp SCENARIO        ep x tp: the TP reduce is timed (all_reduce = reduce-scatter +
                     all-gather, longer than reduce_scatter), the dispatch carries tp
                     copies, reduce_scatter's combine 1/tp of all_reduce's
  refuse SCENARIO    the new keys' impossible or idle combinations exit 2 naming the file,
                     line and key

Usage: ep_overlap_checks.py TDMSIM WORKDIR MODE SCENARIO"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402
from ep_checks import check_layer, close, expect_refused, hot_scenario, run, write  # noqa: E402


def summary_without_wall(out):
    s = tdmsimtools.read_summary(out)
    s.pop("simulation_wall_s")
    return s


def check_ranks_sum(p):
    total = p["total_us"]
    for r in p["ep"]["ranks"]:
        assert r["dispatch"]["us"] >= 0 and r["combine"]["us"] >= 0 and r["wait_us"] >= 0, r
        close(r["compute_us"] + r["dispatch"]["us"] + r["combine"]["us"] + r["wait_us"], total,
              f"gpu {r['rank']}: compute + exposed communication + wait", 1e-6)
        assert r["compute_us"] <= total * (1 + 1e-12)


def main():
    tdmsim, work, mode, scenario = sys.argv[1], sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "overlap":
        base = hot_scenario(work, scenario, "base", "parallel: {ep: 4}\n")
        # The same name, so the summaries can be compared whole.
        none = write(os.path.join(work, "none.yaml"), open(base).read().replace(
            "parallel: {ep: 4}", "parallel: {ep: 4, overlap: none}"))
        a = os.path.join(work, "default")
        b = os.path.join(work, "none")
        for sc, out in ((base, a), (none, b)):
            tdmsimtools.expect_exit(tdmsim, "run", sc, "--output", out, "--trace", "--quiet")
        assert summary_without_wall(a) == summary_without_wall(b), "overlap none differs from the default"
        for f in ("stats.json", "trace.json"):
            assert open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read(), f
        s0 = tdmsimtools.read_summary(a)
        cfg = json.load(open(os.path.join(a, "config.json")))
        top_k, hidden = cfg["model"]["top_k"], cfg["model"]["hidden_size"]
        check_layer(s0, top_k, hidden, 2)
        assert s0["paths"][0]["ep"]["overlap"] == "none" and "chunked" not in s0["paths"][0]["ep"]
        for chunks in (2, 4):
            sc = write(os.path.join(work, f"chunked{chunks}.yaml"), open(base).read().replace(
                "parallel: {ep: 4}", f"parallel: {{ep: 4, overlap: chunked, chunks: {chunks}}}"))
            out = os.path.join(work, f"chunked{chunks}")
            tdmsimtools.expect_exit(tdmsim, "run", sc, "--output", out, "--trace", "--quiet")
            s = tdmsimtools.read_summary(out)
            p, p0 = s["paths"][0], s0["paths"][0]
            ep, ch = p["ep"], p["ep"]["chunked"]
            assert ep["overlap"] == "chunked" and ch["chunks"] == chunks and len(ch["micro_batches"]) == chunks
            assert s["layer"]["ep"]["chunks"] == chunks
            # The same draw: the layer without overlap is the none run's, bit for bit.
            assert ch["no_overlap_us"] == p0["total_us"], (ch["no_overlap_us"], p0["total_us"])
            # Overlap only helps the micro-batches, within the resources' busy time.
            assert p["total_us"] <= ch["serial_us"] * (1 + 1e-12), (p["total_us"], ch["serial_us"])
            comm = sum(m["dispatch"]["time_us"] + m["combine"]["time_us"] for m in ch["micro_batches"])
            assert p["total_us"] >= comm * (1 - 1e-12)
            close(ep["dispatch"]["time_us"], sum(m["dispatch"]["time_us"] for m in ch["micro_batches"]),
                  "dispatch = its micro-batches'", 1e-9)
            check_ranks_sum(p)
            hidden_us = 0.0
            for r, r0 in zip(ep["ranks"], p0["ep"]["ranks"]):
                close(sum(r["chunk_compute_us"]), r["compute_us"], "compute = its micro-batches'", 1e-9)
                # The micro-batches partition the batch: the same tokens move.
                for c in ("dispatch", "combine"):
                    assert r[c]["sent_bytes"] == r0[c]["sent_bytes"], (c, r, r0)
                    assert r[c]["received_bytes"] == r0[c]["received_bytes"], (c, r, r0)
                    assert r[c]["hidden_us"] >= 0
                    hidden_us += r[c]["hidden_us"]
                assert r["picks"] == r0["picks"] and r["own_tokens"] == r0["own_tokens"]
            tr = json.load(open(os.path.join(out, "trace.json")))
            tracks = {e["args"]["name"] for e in tr["traceEvents"] if e.get("name") == "thread_name"}
            assert tracks == {f"gpu[{g}]" for g in range(4)} | {f"gpu[{g}] comm" for g in range(4)}, tracks
            names = {e["name"] for e in tr["traceEvents"] if e.get("ph") == "X"}
            assert all(f"[{c}] dispatch" in names and f"[{c}] combine" in names for c in range(chunks)), names
            print(f"chunks {chunks}: layer {p['total_us']:.2f} us, micro-batches one after another "
                  f"{ch['serial_us']:.2f} us, without overlap {ch['no_overlap_us']:.2f} us; "
                  f"communication hidden under compute {hidden_us:.2f} us (sum over GPUs)")
            assert hidden_us > 0, "no communication overlapped compute"
    elif mode == "gather":
        res = {}
        for combine in ("all_to_all", "all_gather"):
            sc = write(os.path.join(work, combine + ".yaml"),
                       f"base: {scenario}\nname: gather\nparallel: {{ep: 4, combine: {combine}}}\n")
            out = os.path.join(work, combine)
            res[combine] = run(tdmsim, [sc, "--path", "both"], out)
            cfg = json.load(open(os.path.join(out, "config.json")))
        hidden = cfg["model"]["hidden_size"]
        a2a, ag = res["all_to_all"], res["all_gather"]
        assert ag["layer"]["ep"]["combine"] == "all_gather" and "combine" not in a2a["layer"]["ep"]
        for i, path in enumerate(("software", "tdm")):
            p, q = a2a["paths"][i], ag["paths"][i]
            assert p["path"] == q["path"] == path
            assert p["ep"]["dispatch"] == q["ep"]["dispatch"]
            ranks = q["ep"]["ranks"]
            rows = [r["tokens"] for r in ranks]
            for g, (r, r0) in enumerate(zip(ranks, p["ep"]["ranks"])):
                # The experts run as they do under all_to_all (the descriptors and
                # kernels of a GPU's share do not depend on the combine).
                assert r["compute_us"] == r0["compute_us"], (path, g)
                assert r["combine"]["sent_bytes"] == (len(ranks) - 1) * rows[g] * hidden * 2
                assert r["combine"]["received_bytes"] == sum(rows[h] for h in range(len(ranks)) if h != g) * hidden * 2
                assert r["combine"]["sent_bytes"] >= r0["combine"]["sent_bytes"]
            check_ranks_sum(q)
            close(q["total_us"], q["ep"]["before_dispatch_max_us"] + q["ep"]["dispatch"]["time_us"] +
                  q["ep"]["after_dispatch_max_us"] + q["ep"]["combine"]["time_us"], "barrier rule", 1e-9)
            assert q["ep"]["combine"]["time_us"] >= p["ep"]["combine"]["time_us"]
            assert q["total_us"] >= p["total_us"]
            print(f"{path}: combine all_to_all {p['ep']['combine']['time_us']:.2f} us (layer {p['total_us']:.2f}), "
                  f"all_gather {q['ep']['combine']['time_us']:.2f} us (layer {q['total_us']:.2f})")
    elif mode == "tp":
        res = {}
        for name, par in (("ep4", "{ep: 4}"), ("ar", "{ep: 4, tp: 2}"),
                          ("rs", "{ep: 4, tp: 2, tp_reduce: reduce_scatter}")):
            sc = hot_scenario(work, scenario, name, f"parallel: {par}\n")
            res[name] = run(tdmsim, [sc], os.path.join(work, name))
        cfg = json.load(open(os.path.join(work, "ep4", "config.json")))
        hidden = cfg["model"]["hidden_size"]
        e4, ar, rs = (res[k]["paths"][0]["ep"] for k in ("ep4", "ar", "rs"))
        assert "tp" not in e4 and ar["tp"] == 2 and rs["tp"] == 2
        assert ar["gpus"] == 8 and ar["tp_reduce"]["op"] == "all_reduce" and rs["tp_reduce"]["op"] == "reduce_scatter"
        # all_reduce = reduce-scatter then all-gather of the same rows.
        assert ar["tp_reduce"]["time_us"] > rs["tp_reduce"]["time_us"] > 0
        for r, r4 in zip(ar["ranks"], e4["ranks"]):
            # A TP member computes on the rank's tokens with half of each expert.
            assert r["tokens"] == r4["tokens"] and r["picks"] == r4["picks"]
            # Each TP member pair carries the rank's tokens: per GPU as much as ep 4 alone.
            assert r["dispatch"]["sent_bytes"] == r4["dispatch"]["sent_bytes"]
            # The reduce: each member sends 1/tp of its partial rows to the other (twice for all_reduce).
            assert r["tp_reduce"]["sent_bytes"] == 2 * r["tokens"] * hidden * 2 / 2
        for r, r_ar in zip(rs["ranks"], ar["ranks"]):
            assert r["tp_reduce"]["sent_bytes"] * 2 == r_ar["tp_reduce"]["sent_bytes"]
            assert r["combine"]["sent_bytes"] * 2 == r_ar["combine"]["sent_bytes"]
        for k in ("ar", "rs"):
            p = res[k]["paths"][0]
            check_ranks_sum(p)
            close(p["total_us"], p["ep"]["before_dispatch_max_us"] + p["ep"]["dispatch"]["time_us"] +
                  p["ep"]["after_dispatch_max_us"] + p["ep"]["combine"]["time_us"], "barrier rule", 1e-9)
            print(f"{k}: layer {p['total_us']:.2f} us, tp reduce {p['ep']['tp_reduce']['time_us']:.2f} us, "
                  f"combine (with the reduce) {p['ep']['combine']['time_us']:.2f} us")
        print(f"ep4 alone: layer {res['ep4']['paths'][0]['total_us']:.2f} us")
    elif mode == "refuse":
        cases = [
            ("chunks without chunked", "parallel: {ep: 4, chunks: 2}\n", "parallel.chunks", "overlap chunked"),
            ("chunked on one GPU", "parallel: {overlap: chunked}\n", "parallel.overlap", "changes nothing"),
            ("one chunk", "parallel: {ep: 4, overlap: chunked, chunks: 1}\n", "parallel.chunks", "overlap none"),
            ("more chunks than tokens", "parallel: {ep: 4, overlap: chunked, chunks: 17}\n", "parallel.chunks",
             "at least one token"),
            ("all_gather on one GPU", "parallel: {combine: all_gather}\n", "parallel.combine", "changes nothing"),
            ("tp_reduce without ep", "parallel: {tp: 2, tp_reduce: reduce_scatter}\n", "parallel.tp_reduce",
             "ep > 1"),
            ("tp_reduce without tp", "parallel: {ep: 4, tp_reduce: reduce_scatter}\n", "parallel.tp_reduce",
             "tp > 1"),
            ("ep x tp not whole nodes", "parallel: {ep: 4, tp: 3}\n", "parallel.tp", "whole nodes"),
        ]
        for what, extra, key, words in cases:
            expect_refused(tdmsim, work, f"base: {scenario}\nname: bad\npath: software\ntokens: 64\n{extra}", [],
                           what, key, words, lambda text: text.startswith("parallel:"))
    else:
        sys.exit(f"unknown mode {mode}")
    print("ok")


if __name__ == "__main__":
    main()
