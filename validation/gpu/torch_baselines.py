#!/usr/bin/env python3
"""The two PyTorch MoE layers a user would otherwise write, timed on the same GPU
with the same routing as a GPU case (issue 6, kernel quality):

  loop     for each expert with rows: gather, x @ W13^T, activation, @ W2^T,
           routed weight, index_add into y (one small GEMM pair per expert)
  grouped  one stable sort of the rows by expert, torch._grouped_mm for gate/up
           and for down over all experts, activation, routed weight, index_add

Both in bf16 (an fp8 case is timed with bf16 weights of its shape, which moves
twice the weight bytes: say so when comparing). Each: warm-up, then the median
of --repeats runs timed with CUDA events, L2 flushed (a 512 MiB write) before
each run outside the timed region.

torch_baselines.py CASE_DIR [CASE_DIR ...] [--repeats N] > baselines.csv
"""
import argparse
import os
import struct
import sys

import numpy as np
import torch


def read_case(d):
    kv = {}
    with open(os.path.join(d, "case.txt")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            kv[k] = v
    c = {k: kv[k] for k in kv}
    for k in ("tokens", "hidden", "inter", "experts_local", "shared", "top_k", "experts_total"):
        c[k] = int(kv[k])
    t, k = c["tokens"], c["top_k"]
    c["ids"] = np.fromfile(os.path.join(d, "routing_ids.bin"), dtype=np.uint32).reshape(t, k)
    c["weights"] = np.fromfile(os.path.join(d, "routing_weights.bin"), dtype=np.float32).reshape(t, k)
    return c


def fused_rows(c):
    """(token, fused expert, weight) of every local row, shared slots included."""
    t, k, el, sh = c["tokens"], c["top_k"], c["experts_local"], c["shared"]
    tok = np.repeat(np.arange(t), k)
    exp = c["ids"].reshape(-1).astype(np.int64)
    w = c["weights"].reshape(-1)
    keep = exp < el
    tok, exp, w = tok[keep], exp[keep], w[keep]
    if sh:
        tok = np.concatenate([tok, np.repeat(np.arange(t), sh)])
        exp = np.concatenate([exp, np.tile(np.arange(el, el + sh), t)])
        w = np.concatenate([w, np.ones(t * sh, dtype=np.float32)])
    return tok, exp, w


def act(h, inter):
    g, u = h[:, :inter], h[:, inter:]
    return torch.nn.functional.silu(g) * u


def time_fn(fn, repeats, warmup=3):
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        flush.fill_(1)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return float(np.median(times))


def run(case_dir, repeats):
    c = read_case(case_dir)
    T, H, I = c["tokens"], c["hidden"], c["inter"]
    E = c["experts_local"] + c["shared"]
    dev = "cuda"
    tok, exp, w = fused_rows(c)
    x = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
    # Weights as the grouped GEMM wants them: [E, K, N].
    w13 = (torch.randn(E, H, 2 * I, device=dev, dtype=torch.bfloat16) / H ** 0.5)
    w2 = (torch.randn(E, I, H, device=dev, dtype=torch.bfloat16) / I ** 0.5)
    tok_t = torch.from_numpy(tok).to(dev)
    exp_t = torch.from_numpy(exp).to(dev)
    w_t = torch.from_numpy(w).to(dev)
    experts = sorted(set(exp.tolist()))
    per_expert = {e: (torch.from_numpy(tok[exp == e]).to(dev), torch.from_numpy(w[exp == e]).to(dev))
                  for e in experts}
    y = torch.zeros(T, H, device=dev, dtype=torch.float32)

    def loop():
        y.zero_()
        for e in experts:
            t_e, w_e = per_expert[e]
            h = x.index_select(0, t_e) @ w13[e]
            o = act(h, I) @ w2[e]
            y.index_add_(0, t_e, o.float() * w_e[:, None])

    def grouped():
        y.zero_()
        order = torch.sort(exp_t, stable=True).indices
        counts = torch.bincount(exp_t, minlength=E)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        xs = x.index_select(0, tok_t[order])
        h = torch._grouped_mm(xs, w13, offs=offs)
        o = torch._grouped_mm(act(h, I).contiguous(), w2, offs=offs)
        y.index_add_(0, tok_t[order], o.float() * w_t[order][:, None])

    out = {"case": os.path.basename(case_dir.rstrip("/"))}
    for name, fn in (("loop", loop), ("grouped", grouped)):
        try:
            out[name] = time_fn(fn, repeats)
        except Exception as e:  # report, keep going: one unsupported shape is not fatal
            out[name] = float("nan")
            print(f"{out['case']}: {name}: {type(e).__name__}: {e}", file=sys.stderr)
    del w13, w2
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    print("name,torch_loop_us,torch_grouped_us")
    for d in a.cases:
        r = run(d, a.repeats)
        print(f"{r['case']},{r['loop']:.2f},{r['grouped']:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
