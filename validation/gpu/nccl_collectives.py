#!/usr/bin/env python3
"""NCCL all-to-all, all-gather and reduce-scatter on the GPUs of one host, timed the way
nccl-tests times them, written as rows `validation/collectives.py` can compare with the
collective model (issue 23 part 2: "measure NCCL all-to-all on it and commit the data").

Run one process per GPU with torchrun (PyTorch's NCCL backend):

  torchrun --standalone --nproc_per_node N validation/gpu/nccl_collectives.py --output DIR

Sizes follow nccl-tests' convention, which is also `tdmsim collective --bytes`:
all_to_all: what each GPU sends, its own slice included; all_gather: the gathered
output per GPU; reduce_scatter: the input per GPU. For each (op, size) every rank runs
`--warmup` untimed and `--iters` timed operations, each between two CUDA events on the
communication stream after a barrier; a rank's time is the median of its iterations and
the row's time is the slowest rank's median (the collective ends when its last rank
does). busbw as nccl-tests defines it: algbw x (N-1)/N for all three operations.

Writes DIR/nccl-N.csv (op, gpus, bytes, time_us, min_us, algbw_gb_s, busbw_gb_s) and
DIR/nccl-N.json (device, driver, NCCL and torch versions, the command, the date) from rank
0. With one GPU the operations are local copies: the script still runs (a check of the
script), but the rows say nothing about an interconnect.
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import sys


def parse_sizes(text):
    sizes = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = 1
        for suffix, mult in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
            if part.endswith(suffix):
                part, scale = part[:-1], mult
        sizes.append(int(part) * scale)
    return sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", required=True, help="folder for nccl-N.csv and nccl-N.json")
    ap.add_argument("--sizes", default="64K,256K,1M,4M,16M,64M,256M,1G",
                    help="bytes per GPU, comma-separated, K/M/G suffixes (default: %(default)s)")
    ap.add_argument("--ops", default="all_to_all,all_gather,reduce_scatter")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()

    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    stream = torch.cuda.current_stream()

    def run(op, nbytes):
        elems = nbytes // 2  # bf16
        elems -= elems % n
        if op == "all_to_all":
            src = torch.ones(elems, dtype=torch.bfloat16, device=dev)
            dst = torch.empty_like(src)
            call = lambda: dist.all_to_all_single(dst, src)  # noqa: E731
        elif op == "all_gather":
            dst = torch.empty(elems, dtype=torch.bfloat16, device=dev)
            src = torch.ones(elems // n, dtype=torch.bfloat16, device=dev)
            call = lambda: dist.all_gather_into_tensor(dst, src)  # noqa: E731
        elif op == "reduce_scatter":
            src = torch.ones(elems, dtype=torch.bfloat16, device=dev)
            dst = torch.empty(elems // n, dtype=torch.bfloat16, device=dev)
            call = lambda: dist.reduce_scatter_tensor(dst, src)  # noqa: E731
        else:
            raise SystemExit(f"--ops: unknown operation {op!r}")
        for _ in range(args.warmup):
            call()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.iters):
            dist.barrier()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            call()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)  # ms -> us
        mine = torch.tensor([statistics.median(times), min(times)], dtype=torch.float64, device=dev)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        return elems * 2, float(mine[0]), float(mine[1])

    rows = []
    for op in args.ops.split(","):
        for nbytes in parse_sizes(args.sizes):
            size, med, lo = run(op.strip(), nbytes)
            algbw = size / (med * 1e-6) / 1e9
            rows.append({"op": op.strip(), "gpus": n, "bytes": size, "time_us": round(med, 2),
                         "min_us": round(lo, 2), "algbw_gb_s": round(algbw, 2),
                         "busbw_gb_s": round(algbw * (n - 1) / n, 2)})
            if rank == 0:
                print(f"{op:>14} {n} GPUs {size:>12} B  {med:10.2f} us  busbw {rows[-1]['busbw_gb_s']:8.2f} GB/s",
                      flush=True)
    if rank == 0:
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, f"nccl-{n}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        meta = {"device": torch.cuda.get_device_name(dev), "gpus": n,
                "nccl": ".".join(map(str, torch.cuda.nccl.version())), "torch": torch.__version__,
                "cuda": torch.version.cuda, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                "command": " ".join(["torchrun --standalone --nproc_per_node", str(n)] + sys.argv),
                "warmup": args.warmup, "iters": args.iters}
        with open(os.path.join(args.output, f"nccl-{n}.json"), "w") as f:
            json.dump(meta, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
