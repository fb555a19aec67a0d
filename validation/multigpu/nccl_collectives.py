#!/usr/bin/env python3
"""Times NCCL all-to-all and all-gather between the GPUs of one host (PyTorch, one
process per GPU), for the interconnect model's validation (issue 23 part 2).

    python3 validation/multigpu/nccl_collectives.py OUTDIR [--sizes 2,4,8] [--iters 20]

Writes OUTDIR/nccl_collectives.csv (one row per collective, GPU count and message size)
and OUTDIR/device.txt (nvidia-smi, the GPU link matrix, library versions, the command).

Sizes are bytes each rank sends in total (all-to-all: split evenly over the ranks, itself
included, as `all_to_all_single` does; all-gather: each rank's contribution). Times are
CUDA-event times of one collective, median over `--iters` runs after warm-up, each run
started after a barrier so the ranks enter together; the row's time is the slowest rank's
median. Bandwidths follow nccl-tests' conventions: algbw = bytes / time with bytes the
per-rank send size for all-to-all and the gathered size for all-gather; busbw = algbw x
(n-1)/n for both.

NVLink multicast (NVLS) stays off: the lending workplace asks for it, and the model
describes unicast all-to-all anyway.
"""
import argparse
import datetime
import os
import subprocess
import sys

# Set before torch loads NCCL, also for the spawned children (they inherit os.environ).
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

MESSAGE_BYTES = [2 ** k for k in range(12, 31, 2)]  # 4 KiB .. 1 GiB per rank


def _time_one(fn, iters, warmup):
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)  # us
    times.sort()
    return times


def _worker(rank, world, port, iters, warmup, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(1234 + rank)
    for nbytes in MESSAGE_BYTES:
        elems = nbytes // 2  # bf16
        elems -= elems % world
        send = torch.randn(elems, dtype=torch.bfloat16, device="cuda", generator=gen)
        recv = torch.empty_like(send)
        # Correctness once per size: chunk j of rank r's output is rank j's chunk r.
        dist.all_to_all_single(recv, send)
        gathered = [torch.empty_like(send) for _ in range(world)]
        dist.all_gather(gathered, send)
        chunk = elems // world
        for j in range(world):
            if not torch.equal(recv[j * chunk:(j + 1) * chunk],
                               gathered[j][rank * chunk:(rank + 1) * chunk]):
                raise SystemExit(f"all_to_all_single result wrong at rank {rank}, peer {j}")
        del gathered
        n_iter = iters if nbytes <= 2 ** 26 else max(5, iters // 4)
        t = _time_one(lambda: dist.all_to_all_single(recv, send), n_iter, warmup)
        rows.append(("all_to_all", nbytes, t))
        out = torch.empty(elems * world, dtype=torch.bfloat16, device="cuda")
        t = _time_one(lambda: dist.all_gather_into_tensor(out, send), n_iter, warmup)
        rows.append(("all_gather", nbytes, t))
        del send, recv, out
        torch.cuda.empty_cache()
    # The slowest rank's median decides: gather every rank's numbers on rank 0.
    all_rows = [None] * world
    dist.all_gather_object(all_rows, rows)
    if rank == 0:
        queue.put(all_rows)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--sizes", default="", help="GPU counts, e.g. 2,4,8 (default: 2 up to all, powers of 2)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    ngpu = torch.cuda.device_count()
    # --sizes 1 runs the whole procedure on one GPU (NCCL's self-copy), to check the
    # script where only one GPU is lent; its rows say nothing about links.
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        [n for n in (2, 4, 8, 16) if n <= ngpu]
    if not sizes or max(sizes) > ngpu or min(sizes) < 1:
        print(f"GPU counts {sizes or 'none'} do not fit the {ngpu} GPUs here", file=sys.stderr)
        return 77
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "device.txt"), "w") as f:
        f.write(f"date: {datetime.datetime.utcnow().isoformat(timespec='seconds')}Z\n")
        f.write("command: " + " ".join(sys.argv) + "\n")
        f.write(f"torch {torch.__version__}, cuda {torch.version.cuda}, nccl {torch.cuda.nccl.version()}\n")
        f.write("env: NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1\n\n")
        for cmd in (["nvidia-smi"], ["nvidia-smi", "topo", "-m"], ["nvidia-smi", "nvlink", "-s", "-i", "0"]):
            try:
                f.write("$ " + " ".join(cmd) + "\n" + subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout + "\n")
            except Exception as e:  # a missing tool is recorded, not fatal
                f.write(f"$ {' '.join(cmd)}: {e}\n")
    ctx = mp.get_context("spawn")
    path = os.path.join(args.outdir, "nccl_collectives.csv")
    with open(path, "w") as out:
        out.write("gpus,collective,bytes_per_rank,median_us,min_us,max_us,slowest_rank,algbw_GBps,busbw_GBps\n")
        for n, port in zip(sizes, range(29500, 29600)):
            q = ctx.Queue()
            procs = [ctx.Process(target=_worker, args=(r, n, port, args.iters, args.warmup, q)) for r in range(n)]
            for p in procs:
                p.start()
            all_rows = q.get(timeout=1800)
            for p in procs:
                p.join()
                if p.exitcode != 0:
                    print(f"a rank failed at {n} GPUs (exit {p.exitcode})", file=sys.stderr)
                    return 1
            for i, (coll, nbytes, _) in enumerate(all_rows[0]):
                medians = [r[i][2][len(r[i][2]) // 2] for r in all_rows]
                slow = max(range(n), key=lambda r: medians[r])
                med = medians[slow]
                lo = min(r[i][2][0] for r in all_rows)
                hi = max(r[i][2][-1] for r in all_rows)
                moved = nbytes if coll == "all_to_all" else nbytes * n
                alg = moved / (med * 1e-6) / 1e9
                bus = alg * (n - 1) / n if n > 1 else float('nan')
                out.write(f"{n},{coll},{nbytes},{med:.2f},{lo:.2f},{hi:.2f},{slow},{alg:.2f},{bus:.2f}\n")
                print(f"{n} GPUs {coll:10s} {nbytes:>11d} B  {med:10.1f} us  busbw {bus:7.1f} GB/s", flush=True)
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
