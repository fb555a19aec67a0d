#!/usr/bin/env python3
"""An expert-parallel layer over MPI ranks (`mpirun -np R tdmsim run SCENARIO --gpus N`;
CTest ep.mpi_*; docs/expert-parallel.md "Running on several processes / nodes").

Modes (each skipped, 77, without mpirun):
  ranks SCENARIO R N    the single-process run of the N-GPU layer, then under
                        `mpirun -np R`: summary.json (but its wall-clock time),
                        stats.json, config.json and trace.json byte for byte the same
  refuse SCENARIO       errors under mpirun -np 2 exit 2 on every rank (each rank's code
                        recorded) with the message printed once and nothing written: an
                        uneven --gpus and a tenants file (every rank refuses them), an existing output
                        folder (rank 0 alone refuses it) and a memory limit set for
                        rank 1 alone
  sweep SCENARIO        a sweep over parallel.ep under mpirun -np 2 gives the
                        single-process results.csv and results.jsonl

Usage: ep_mpi_checks.py TDMSIM WORKDIR MODE SCENARIO [R N]"""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SKIP = 77


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tiny_scenario(work, base, name, extra=""):
    # Few tokens and the software path: small enough for a 2-core CI machine.
    return write(os.path.join(work, name + ".yaml"),
                 f"base: {base}\nname: {name}\ntokens: 8\n"
                 f"routing: {{source: hot, hot_experts: [0, 1, 2, 3], hot_fraction: 0.5}}\n" + extra)


def mpirun_cmd(ranks):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        print("mpirun not found: skipped (scripts/install-deps.sh installs openmpi-bin)")
        sys.exit(SKIP)
    return [mpirun, "-np", str(ranks), "--oversubscribe", "--allow-run-as-root"]


def run(cmd, rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != rc:
        sys.exit(f"FAILED: exit {p.returncode}, expected {rc}: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def without_wall_clock(summary):
    # The one field that is a measurement of this run, not a result.
    text, n = re.subn(rb'\n  "simulation_wall_s": [^\n]*\n', b"\n", summary)
    assert n == 1, "summary.json has no simulation_wall_s line"
    return text


def same_outputs(a, b):
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b)), (names, sorted(os.listdir(b)))
    assert "trace.json" in names and "summary.json" in names, names
    for name in names:
        x, y = read(os.path.join(a, name)), read(os.path.join(b, name))
        if name == "summary.json":
            x, y = without_wall_clock(x), without_wall_clock(y)
        assert x == y, f"{name} differs: {a} vs {b}"
    return names


def main():
    tdmsim, work, mode, scenario = sys.argv[1], sys.argv[2], sys.argv[3], os.path.abspath(sys.argv[4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "ranks":
        ranks, gpus = int(sys.argv[5]), int(sys.argv[6])
        # "chunked": overlap in micro-batches, whose runs are jobs spread over the
        # ranks beside the GPUs' whole shares (ep_jobs).
        chunked = len(sys.argv) > 7 and sys.argv[7] == "chunked"
        mpi = mpirun_cmd(ranks)
        extra = f"parallel: {{ep: {gpus}, overlap: chunked, chunks: 2}}\n" if chunked else ""
        sc = tiny_scenario(work, scenario, "mpi", extra)
        args = ["run", sc, "--gpus", str(gpus), "--trace", "--force"]
        single, ranked = os.path.join(work, "single"), os.path.join(work, f"np{ranks}")
        run([tdmsim, *args, "--output", single, "--quiet"])
        p = run([*mpi, tdmsim, *args, "--output", ranked])
        assert f"simulated on {ranks} MPI ranks" in p.stdout, p.stdout
        # Rank 0 alone prints the summary.
        assert p.stdout.count("expert parallel over") == 1, p.stdout
        names = same_outputs(single, ranked)
        if chunked:
            summary = json.loads(read(os.path.join(ranked, "summary.json")))
            assert "chunked" in summary["paths"][0]["ep"], "the chunked run has no ep.chunked summary"
        print(f"mpirun -np {ranks}, {gpus} GPUs{' in 2 micro-batches' if chunked else ''}: "
              f"{', '.join(names)} identical to the single-process run")
    elif mode == "refuse":
        mpi = mpirun_cmd(2)
        sc = tiny_scenario(work, scenario, "mpi")
        out = os.path.join(work, "out")
        # Every rank refuses an uneven split (128 experts over 3 GPUs); said once.
        p = run([*mpi, tdmsim, "run", sc, "--gpus", "3", "--output", out], rc=2)
        assert p.stderr.count("--gpus 3") == 1, p.stderr
        assert not os.path.exists(out), "an output folder was written"
        # A tenants file runs in one process: every rank refuses it; said once.
        tenants = os.path.join(ROOT, "workloads", "scenarios", "mi300x-dpx-decode-prefill-tenants.yaml")
        p = run([*mpi, tdmsim, "run", tenants, "--output", out], rc=2)
        assert p.stderr.count("runs in one process") == 1, p.stderr
        assert not os.path.exists(out), "an output folder was written"
        # Rank 0 alone fails (the folder exists, no --force): every rank exits 2.
        os.makedirs(out)
        marker = write(os.path.join(out, "keep.txt"), "mine\n")
        p = run([*mpi, tdmsim, "run", sc, "--gpus", "2", "--output", out], rc=2)
        assert p.stderr.count("exists") == 1, p.stderr
        assert os.listdir(out) == ["keep.txt"] and read(marker) == b"mine\n", os.listdir(out)
        assert not [n for n in os.listdir(work) if n.startswith(".out")], os.listdir(work)
        # Each rank's own exit code (mpirun's is the first failed rank's, and it may
        # stop the others): a wrapper records it and exits 0.
        codes = os.path.join(work, "codes")
        os.makedirs(codes)
        wrap = ['sh', '-c', f'"$0" "$@"; echo $? > {codes}/rank.${{OMPI_COMM_WORLD_RANK:-$PMI_RANK}}', tdmsim]
        run([*mpi, *wrap, "run", sc, "--gpus", "2", "--output", out])
        got = {n: read(os.path.join(codes, n)).strip() for n in sorted(os.listdir(codes))}
        assert got == {"rank.0": b"2", "rank.1": b"2"}, got
        # Rank 1 alone fails (a memory limit set for it only): rank 0 prints its message.
        shutil.rmtree(out)
        limit = ['sh', '-c', 'if [ "${OMPI_COMM_WORLD_RANK:-$PMI_RANK}" = 1 ]; then export TDMSIM_MEMORY_LIMIT=1MiB; '
                 'fi; exec "$0" "$@"', tdmsim]
        p = run([*mpi, *limit, "run", sc, "--gpus", "2", "--output", out], rc=2)
        assert p.stderr.count("over the limit of 1 MiB") == 1, p.stderr
        assert not os.path.exists(out) and not [n for n in os.listdir(work) if n.startswith(".out")]
        print("errors under mpirun -np 2: exit 2 on every rank, the message once, nothing written")
    elif mode == "sweep":
        mpi = mpirun_cmd(2)
        sc = tiny_scenario(work, scenario, "mpi")
        sw = write(os.path.join(work, "sweep.yaml"),
                   f"kind: sweep\nname: ep-mpi\nscenario: {sc}\nmode: grid\naxes:\n  scenario.parallel.ep: [1, 2]\n")
        single, ranked = os.path.join(work, "single"), os.path.join(work, "np2")
        run([tdmsim, "sweep", sw, "--output", single, "-j", "1", "--quiet"])
        p = run([*mpi, tdmsim, "sweep", sw, "--output", ranked, "-j", "1"])
        assert "on 2 MPI ranks" in p.stdout, p.stdout
        for name in ("results.csv", "results.jsonl"):
            assert read(os.path.join(single, name)) == read(os.path.join(ranked, name)), f"{name} differs"
        print("an expert-parallel sweep point under mpirun -np 2: results identical to the single-process sweep")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
