#!/usr/bin/env python3
"""Hardening checks of `tdmsim sweep` (issue 19; CTest runs each mode as its own test).

  mpi_default_jobs SWEEP  mpirun -np 2 without -j (default: the cores) completes, no rank
                          crashes, and the results equal a single-process run's
                          (skipped, 77, without mpirun)
  trace_edit              resume after editing a routing trace reruns the points that read it
                          (only those), with the new trace's results; every row records its
                          inputs hash
  config_edit             resume after editing a tuned kernel table (kernel.config) reruns the
                          points that read it (only those), with the new row's kernels
  lock SWEEP              a second sweep into a folder a running sweep holds exits 2 naming
                          the holder (pid, host); a held lock file is honoured; a killed
                          sweep's lock is released, and the next run resumes
  stale_temporaries SWEEP a resumed sweep removes the hidden temporaries (inside the folder
                          and the staging folder beside it) that killed processes left

Usage: hardening_sweep.py TDMSIM WORKDIR MODE [SWEEP]"""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def run(cmd, expect=0, env=None, timeout=300):
    return tdmsimtools.expect_exit(cmd[0], *cmd[1:], rc=expect, env=env, timeout=timeout)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def rows(out):
    return tdmsimtools.outputs.read_results_jsonl(out)


def dead_pid():
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def wait_for(pred, what, proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return
        if proc.poll() is not None:
            sys.exit(f"the sweep ended before {what}; use a bigger sweep")
        time.sleep(0.02)
    sys.exit(f"timed out waiting for {what}")


def edit_reruns_reader(tdmsim, work, files, sweep_text, edit):
    """A two-point sweep in WORK/case (`files`: name -> text, and sweep.yaml) whose point 0
    reads an input file and point 1 does not: run it, run it again (nothing runs), `edit(case)`
    the file, run it again: point 0 alone runs, with new inputs, and point 1 is kept. Returns
    the output folder, the sweep file, the rows before and after by point, the last run's
    result and the fingerprint before the edit."""
    case = os.path.join(work, "case")
    os.makedirs(case)
    for name, text in files.items():
        with open(os.path.join(case, name), "w") as f:
            f.write(text)
    sweep = os.path.join(case, "sweep.yaml")
    with open(sweep, "w") as f:
        f.write(sweep_text)
    out = os.path.join(work, "out")
    run([tdmsim, "sweep", sweep, "--output", out, "-j", "2", "--quiet"])
    before = {r["point"]: r for r in rows(out)}
    fingerprint = json.load(open(os.path.join(out, "sweep.json")))["fingerprint"]
    r = run([tdmsim, "sweep", sweep, "--output", out])
    assert " 0 run now" in r.stdout, r.stdout
    edit(case)
    r = run([tdmsim, "sweep", sweep, "--output", out])
    assert " 1 run now, 1 already done" in r.stdout, r.stdout
    after = {r["point"]: r for r in rows(out)}
    assert after[0]["inputs_hash"] != before[0]["inputs_hash"]
    assert after[1] == before[1]
    return out, sweep, before, after, r, fingerprint


def main():
    tdmsim, work, mode = sys.argv[1:4]
    spec = sys.argv[4] if len(sys.argv) > 4 else None
    work = os.path.join(work, mode)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if mode == "mpi_default_jobs":
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            print("mpirun not found: skipped (scripts/install-deps.sh installs openmpi-bin)")
            sys.exit(SKIP)
        single = os.path.join(work, "single")
        run([tdmsim, "sweep", spec, "--output", single, "-j", "1", "--quiet"])
        out = os.path.join(work, "mpi")
        # No -j: each rank runs as many points at once as the machine has cores,
        # so rank 1's point threads are oneTBB workers (with -j 1 they are not).
        cmd = [mpirun, "-np", "2", "--oversubscribe", "--allow-run-as-root", tdmsim, "sweep", spec,
               "--output", out]
        r = run(cmd)
        assert "on 2 MPI ranks" in r.stdout, r.stdout
        assert "Segmentation" not in r.stderr and "signal" not in r.stderr, r.stderr
        for name in ("results.csv", "results.jsonl"):
            assert read(os.path.join(single, name)) == read(os.path.join(out, name)), f"{name} differs"
        print("mpirun -np 2 without -j completes with the single-process results")
    elif mode == "trace_edit":
        trace_text = read(os.path.join(SOURCE, "workloads", "traces", "mixtral-8x7b-16tok.trace")).decode()

        def hot_pair(case):  # every token to experts 0 and 1: one hot pair instead of the recorded spread
            with open(os.path.join(case, "routing.trace"), "w") as f:
                f.write("# tdmsim-routing-trace v1 experts=8 top_k=2\n" + "0 1\n" * 16)
        out, sweep, before, after, r, fingerprint = edit_reruns_reader(
            tdmsim, work, {"routing.trace": trace_text,
                           "scenario.yaml": "name: trace-edit\nmachine: mi300x\nmodel: mixtral-8x7b\ntokens: 16\n"
                                            "path: software\nrouting:\n  source: trace\n  trace: routing.trace\n"},
            "name: trace-edit\nscenario: scenario.yaml\naxes:\n  scenario.routing.source: [trace, uniform]\n",
            hot_pair)
        assert "1 finished point(s) run again" in r.stderr, r.stderr
        assert all(len(r["inputs_hash"]) == 16 for r in after.values()), after
        assert after[0]["metrics"]["total_us"] != before[0]["metrics"]["total_us"]
        assert after[0]["layer"]["load_spread"] != before[0]["layer"]["load_spread"]
        assert json.load(open(os.path.join(out, "sweep.json")))["fingerprint"] != fingerprint
        r = run([tdmsim, "sweep", sweep, "--output", out])
        assert " 0 run now" in r.stdout, r.stdout
        print("editing the routing trace reran the points that read it, with the new trace")
    elif mode == "config_edit":
        header = ("cu_num,token,model_dim,inter_dim,expert,topk,act_type,dtype,q_dtype_a,q_dtype_w,q_type,"
                  "use_g1u1,doweight_stage1,block_m,ksplit,us1,kernelName1,us2,kernelName2,us,run_1stage\n")
        row = ("304,64,4096,14336,8,2,ActivationType.Silu,torch.bfloat16,torch.bfloat16,torch.bfloat16,"
               "QuantType.No,1,0,{},0,1.0,,1.0,,2.0,0\n")

        def block_m_64(case):  # the same layer's row at block_m 64
            with open(os.path.join(case, "tuned.csv"), "w") as f:
                f.write(header + row.format(64))
        _, _, before, after, _, _ = edit_reruns_reader(
            tdmsim, work, {"tuned.csv": header + row.format(32),
                           "scenario.yaml": "name: config-edit\nmachine: mi300x\nmodel: mixtral-8x7b\ntokens: 64\n"
                                            "path: software\nkernel: {source: aiter, config: tuned.csv}\n"},
            "name: config-edit\nscenario: scenario.yaml\naxes:\n  scenario.kernel.config: [tuned.csv, \"\"]\n",
            block_m_64)
        assert before[0]["layer"]["block_m"] == 32 and after[0]["layer"]["block_m"] == 64, (before[0]["layer"],
                                                                                           after[0]["layer"])
        print("editing the tuned kernel table reran the point that reads it, with the new row")
    elif mode == "lock":
        out = os.path.join(work, "out")
        # A lock held by someone else (here: this script) is honoured, and named.
        os.makedirs(out)
        with open(os.path.join(out, ".sweep.lock"), "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.write("pid 4242 on host elsewhere, started 2026-01-01T00:00:00Z\n")
            held.flush()
            r = run([tdmsim, "sweep", spec, "--output", out], expect=2)
            assert "in use by another sweep (pid 4242 on host elsewhere" in r.stderr, r.stderr
            assert sorted(os.listdir(out)) == [".sweep.lock"], os.listdir(out)
            # --dry-run --output says so too, as the run would, taking nothing.
            r = run([tdmsim, "sweep", spec, "--output", out, "--dry-run"], expect=2)
            assert "in use by another sweep (pid 4242 on host elsewhere" in r.stderr, r.stderr
            assert sorted(os.listdir(out)) == [".sweep.lock"], os.listdir(out)
        # Released, the same dry run goes on (the folder holds no results).
        r = run([tdmsim, "sweep", spec, "--output", out, "--dry-run"])
        assert r.stdout.startswith(f"output {out}: a folder with no results\n"), r.stdout
        shutil.rmtree(out)
        # A running sweep holds it: a second one exits 2 naming it, writing nothing.
        first = subprocess.Popen([tdmsim, "sweep", spec, "--output", out, "-j", "1", "--quiet"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        jsonl = os.path.join(out, "results.jsonl")
        wait_for(lambda: os.path.exists(jsonl) and read(jsonl).count(b"\n") >= 1, "a point finished", first)
        snapshot = read(jsonl)
        r = run([tdmsim, "sweep", spec, "--output", out, "-j", "1"], expect=2)
        host = socket.gethostname()
        assert f"in use by another sweep (pid {first.pid} on host {host}, started " in r.stderr, r.stderr
        assert read(jsonl).startswith(snapshot), "the refused sweep changed the journal"
        # Killed, its lock is gone with it: the next run resumes and completes.
        first.send_signal(signal.SIGKILL)
        first.wait()
        r = run([tdmsim, "sweep", spec, "--output", out, "-j", "2"])
        assert "already done" in r.stdout, r.stdout
        n = json.load(open(os.path.join(out, "sweep.json")))["rows"]
        assert len(rows(out)) == n, (len(rows(out)), n)
        print("a held folder is refused with its holder named; a killed sweep's lock is released")
    elif mode == "stale_temporaries":
        out = os.path.join(work, "out")
        run([tdmsim, "sweep", spec, "--output", out, "-j", "2", "--quiet"])
        pid = dead_pid()
        inside = [os.path.join(out, f".results.csv.tmp.{pid}"), os.path.join(out, f".sweep.json.tmp.{pid}")]
        for p in inside:
            open(p, "w").write("torn")
        staging = os.path.join(work, f".out.tmp-{pid}")
        os.makedirs(staging)
        open(os.path.join(staging, "sweep.json"), "w").write("{}")
        alive = os.path.join(work, f".out.tmp-{os.getpid()}")  # a live process's: kept
        os.makedirs(alive)
        unrelated = os.path.join(work, f".other.tmp-{pid}")  # another folder's: kept
        os.makedirs(unrelated)
        r = run([tdmsim, "sweep", spec, "--output", out])
        assert " 0 run now" in r.stdout, r.stdout
        left = [p for p in inside + [staging] if os.path.exists(p)]
        assert not left, f"left behind: {left}"
        assert os.path.isdir(alive) and os.path.isdir(unrelated), "removed what was not stale"
        print("stale temporaries of dead processes are removed on resume")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
