#!/usr/bin/env python3
"""Checks of `tdmsim sweep` (CTest runs each mode as its own test).

  reference SWEEP            a -j 2 run into WORKDIR/ref (the fixture the others compare with)
  jobs SWEEP                 -j 1 writes byte-identical results.csv and results.jsonl to -j 2's
  resume SWEEP               SIGKILL a sweep after some points, re-run: no torn or duplicate
                             lines, the same final results as the uninterrupted run
  mpi SWEEP                  mpirun -np 2 gives the same results (skipped, 77, without mpirun)
  refuse SWEEP OTHER_SWEEP   a folder of another sweep: exit 2 and untouched; --force replaces it
  crash SWEEP                a crashing point fails alone: exit 1, the others written; a re-run
                             without the crash completes
  values SWEEP               axis values as users write them: a range of 0.1TB/s steps reads
                             1.2TB/s (not 1.2000000000000002, which no unit takes), a tiny
                             factor x0.00001 scales 6us to a time (not 6e-05us), a machine
                             axis over two files of one name gets a machine_ref column
                             telling their rows apart, draws past 2^64 - 1 refused at repeat,
                             a relative path axis value read relative to the sweep file
  plot SWEEP                 tdmsim plot writes PNG and SVG figures (time and TDM speedup),
                             plots x0.8-style factors as numbers, and refuses bad input
                             and outputs --force may not replace (exit 2, nothing written)

Usage: sweep_checks.py TDMSIM WORKDIR MODE SWEEP [OTHER_SWEEP]"""
import csv as csvmod
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77


def sweep(tdmsim, args, env=None, expect=0):
    return tdmsimtools.expect_exit(tdmsim, "sweep", *args, rc=expect, env=env)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_files(out, killed=False):
    """results.csv: one header, then whole lines; results.jsonl: whole JSON lines, no duplicates.
    The two agree, except after a kill (`killed`), which can land between the journal's append
    and results.csv's: then results.csv may lack the journal's last point, which the next run
    rebuilds from the journal (sweep_results.cpp ResultsJournal::load)."""
    csv = read(os.path.join(out, "results.csv")).decode()
    jsonl = read(os.path.join(out, "results.jsonl")).decode()
    assert csv.endswith("\n") and (jsonl == "" or jsonl.endswith("\n")), "a torn last line"
    lines = csv.splitlines()
    assert lines[0].startswith("point,"), "no header"
    assert sum(1 for l in lines if l.startswith("point,")) == 1, "more than one header"
    keys = set()
    last_point_rows = 0
    for l in jsonl.splitlines():
        row = json.loads(l)
        k = (row["point"], row["path"])
        assert k not in keys, f"duplicate row {k}"
        keys.add(k)
        last_point_rows = row["rows_in_point"]
    lag = last_point_rows if killed else 0
    assert len(keys) - lag <= len(lines) - 1 <= len(keys), "results.csv and results.jsonl disagree"
    return len(keys)


def same_results(a, b):
    for name in ("results.csv", "results.jsonl"):
        assert read(os.path.join(a, name)) == read(os.path.join(b, name)), f"{name} differs: {a} vs {b}"


def main():
    tdmsim, work, mode, spec = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    ref = os.path.join(work, "ref")
    out = os.path.join(work, mode)
    shutil.rmtree(out, ignore_errors=True)
    if mode == "reference":
        shutil.rmtree(ref, ignore_errors=True)
        r = sweep(tdmsim, [spec, "--output", ref, "-j", "2"])
        rows = check_files(ref)
        manifest = json.load(open(os.path.join(ref, "sweep.json")))
        assert rows == manifest["rows"], f"{rows} rows, the sweep has {manifest['rows']}"
        assert not os.path.exists(os.path.join(ref, "failed.jsonl"))
        print(r.stdout.strip())
    elif mode == "jobs":
        sweep(tdmsim, [spec, "--output", out, "-j", "1", "--quiet"])
        check_files(out)
        same_results(ref, out)
        print("-j 1 and -j 2 results are identical")
    elif mode == "resume":
        p = subprocess.Popen([tdmsim, "sweep", spec, "--output", out, "-j", "1", "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        jsonl = os.path.join(out, "results.jsonl")
        deadline = time.time() + 60
        while time.time() < deadline and p.poll() is None:
            if os.path.exists(jsonl) and read(jsonl).count(b"\n") >= 3:
                break
            time.sleep(0.02)
        if p.poll() is not None:
            sys.exit("the sweep finished before it could be killed; use a bigger sweep")
        p.send_signal(signal.SIGKILL)
        p.wait()
        before = check_files(out, killed=True)
        assert 3 <= before < json.load(open(os.path.join(ref, "sweep.json")))["rows"]
        r = sweep(tdmsim, [spec, "--output", out, "-j", "2"])
        assert "already done" in r.stdout, r.stdout
        check_files(out)
        same_results(ref, out)
        print(f"killed after {before} rows; the re-run completed with the same results")
    elif mode == "mpi":
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            print("mpirun not found: skipped (scripts/install-deps.sh installs openmpi-bin)")
            sys.exit(SKIP)
        cmd = [mpirun, "-np", "2", "--oversubscribe", "--allow-run-as-root", tdmsim, "sweep", spec,
               "--output", out, "-j", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            sys.exit(f"FAILED: exit {r.returncode}: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
        assert "on 2 MPI ranks" in r.stdout, r.stdout
        check_files(out)
        same_results(ref, out)
        print("mpirun -np 2 results are identical to the single-process run")
    elif mode == "rebuilt":
        # The same sweep resumed by another build of tdmsim (here the binary with one
        # byte appended, which runs the same): every finished point is run again, not
        # kept as a result of this build (docs/sweeps.md, resuming).
        sweep(tdmsim, [spec, "--output", out, "-j", "2", "--quiet"])
        rows = check_files(out)
        before = read(os.path.join(out, "results.csv"))
        other = os.path.join(work, "tdmsim-rebuilt")
        shutil.copyfile(tdmsim, other)
        with open(other, "ab") as f:
            f.write(b"\0")
        os.chmod(other, 0o755)
        r = sweep(tdmsim, [spec, "--output", out, "-j", "2"])
        assert " 0 run now" in r.stdout, f"the same build runs nothing again:\n{r.stdout}"
        points = json.load(open(os.path.join(out, "sweep.json")))["points"]
        # One point torn (a row of it lost, as a kill between its rows leaves it; here
        # its row says the point has one more): run again, but not counted among the
        # finished points run again.
        jsonl = os.path.join(out, "results.jsonl")
        lines = read(jsonl).decode().splitlines(keepends=True)
        last = json.loads(lines[-1])
        last["rows_in_point"] += 1
        with open(jsonl, "w") as f:
            f.writelines(lines[:-1] + [json.dumps(last) + "\n"])
        r = sweep(other, [spec, "--output", out, "-j", "2"])
        assert f"{points - 1} finished point(s) run again" in r.stderr, r.stderr
        assert read(os.path.join(out, "results.csv")) == before, "the rebuilt binary gave other results"
        print(f"{points} points ({rows} rows) run again by another build, with the same results")
    elif mode == "renamed":
        # The same sweep (same points) from a copy with another name, elsewhere: the
        # folder is resumed and its sweep.json takes the new name and file.
        sweep(tdmsim, [spec, "--output", out, "--quiet"])
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(spec)))))
        copy_dir = os.path.join(work, "renamed-copy", "a", "b")
        os.makedirs(copy_dir, exist_ok=True)
        # The copy's relative scenario path (../../../workloads/...) resolves as the original's.
        link = os.path.join(work, "workloads")
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, "workloads"), link)
        copy = os.path.join(copy_dir, "renamed.yaml")
        with open(spec) as f, open(copy, "w") as g:
            g.write(f.read().replace("name: test-tiny", "name: test-tiny-renamed"))
        r = sweep(tdmsim, [copy, "--output", out])
        assert "already done" in r.stdout and " 0 run now" in r.stdout, r.stdout
        manifest = json.load(open(os.path.join(out, "sweep.json")))
        assert manifest["sweep"] == "test-tiny-renamed", manifest["sweep"]
        assert manifest["file"] == os.path.abspath(copy), manifest["file"]
        print("resumed from a renamed copy; sweep.json names it")
    elif mode == "refuse":
        other = sys.argv[5]
        shutil.copytree(ref, out)
        before = {n: read(os.path.join(out, n)) for n in os.listdir(out)}
        r = sweep(tdmsim, [other, "--output", out], expect=2)
        assert "different sweep" in r.stderr, r.stderr
        assert {n: read(os.path.join(out, n)) for n in os.listdir(out)} == before, "folder changed"
        # --dry-run --output checks the folder as the run would, changing nothing.
        r = sweep(tdmsim, [other, "--output", out, "--dry-run"], expect=2)
        assert "different sweep" in r.stderr, r.stderr
        r = sweep(tdmsim, [other, "--output", out, "--dry-run", "--force"])
        assert r.stdout.startswith(f"output {out}: replaces the sweep there (--force)\n"), r.stdout
        r = sweep(tdmsim, [spec, "--output", out, "--dry-run"])
        assert r.stdout.startswith(f"output {out}: resumes this sweep's results there\n"), r.stdout
        assert {n: read(os.path.join(out, n)) for n in os.listdir(out)} == before, "folder changed"
        fresh = os.path.join(work, "dry-new")
        shutil.rmtree(fresh, ignore_errors=True)
        r = sweep(tdmsim, [other, "--output", fresh, "--dry-run"])
        assert r.stdout.startswith(f"output {fresh}: a new folder\n"), r.stdout
        assert not os.path.exists(fresh), "--dry-run made the output folder"
        a_file = os.path.join(work, "dry-file")
        with open(a_file, "w") as f:
            f.write("x")
        r = sweep(tdmsim, [other, "--output", a_file, "--dry-run"], expect=2)
        assert "exists and is not a folder" in r.stderr, r.stderr
        sweep(tdmsim, [other, "--output", out, "--force", "--quiet"])
        assert json.load(open(os.path.join(out, "sweep.json")))["file"] == os.path.abspath(other)
        r = sweep(tdmsim, [other, "--output", out])
        assert " 0 run now" in r.stdout, r.stdout
        os.makedirs(os.path.join(work, "notasweep"), exist_ok=True)
        with open(os.path.join(work, "notasweep", "keep.txt"), "w") as f:
            f.write("x")
        r = sweep(tdmsim, [other, "--output", os.path.join(work, "notasweep")], expect=2)
        assert "holds no sweep" in r.stderr, r.stderr
        # A damaged sweep.json is said as such, not as "a different sweep (?, ?)".
        damaged = os.path.join(work, "damaged")
        shutil.rmtree(damaged, ignore_errors=True)
        shutil.copytree(ref, damaged)
        with open(os.path.join(damaged, "sweep.json"), "w") as f:
            f.write("{ not json")
        r = sweep(tdmsim, [other, "--output", damaged], expect=2)
        assert "its sweep.json cannot be read" in r.stderr, r.stderr
        # A --force replacement interrupted after sweep.json became .sweep.replacing:
        # refused without --force, finished with it.
        halfway = os.path.join(work, "halfway")
        shutil.rmtree(halfway, ignore_errors=True)
        os.makedirs(halfway)
        for name in (".sweep.replacing", "results.jsonl"):
            with open(os.path.join(halfway, name), "w") as f:
                f.write("{}\n")
        r = sweep(tdmsim, [other, "--output", halfway], expect=2)
        assert "was interrupted" in r.stderr, r.stderr
        sweep(tdmsim, [other, "--output", halfway, "--force", "--quiet"])
        assert os.path.exists(os.path.join(halfway, "sweep.json"))
        assert not os.path.exists(os.path.join(halfway, ".sweep.replacing")), os.listdir(halfway)
        # --force does not empty a folder that holds no sweep (the user's own).
        r = sweep(tdmsim, [other, "--output", os.path.join(work, "notasweep"), "--force"], expect=2)
        assert "holds no sweep" in r.stderr and "remove it yourself" in r.stderr, r.stderr
        assert os.listdir(os.path.join(work, "notasweep")) == ["keep.txt"], os.listdir(os.path.join(work, "notasweep"))
        # Nor a sweep's folder that holds a file the sweep reads (its sweep file).
        kept = os.path.join(out, os.path.basename(spec))
        shutil.copy(spec, kept)
        with open(kept) as f:
            text = f.read()
        # The copy's relative references must still resolve: name files absolutely.
        for key in ("scenario", "machine"):
            text = re.sub(rf"^{key}: (\S+\.yaml)$",
                          lambda m: f"{key}: {os.path.join(os.path.dirname(os.path.abspath(spec)), m.group(1))}",
                          text, flags=re.M)
        with open(kept, "w") as f:
            f.write(text)
        before = sorted(os.listdir(out))
        r = sweep(tdmsim, [kept, "--output", out, "--force"], expect=2)
        assert "which this sweep reads" in r.stderr and kept in r.stderr, r.stderr
        assert sorted(os.listdir(out)) == before, "folder changed"
        print("another sweep's folder is refused (exit 2, untouched) and replaced with --force; "
              "--force leaves a folder that is no sweep's, or holds the sweep's own file")
    elif mode == "crash":
        env = dict(os.environ, TDMSIM_TEST_CRASH_POINT="1")
        r = sweep(tdmsim, [spec, "--output", out, "-j", "2"], env=env, expect=1)
        assert "point 1 failed" in r.stderr and "signal" in r.stderr, r.stderr
        points = {r["point"] for r in tdmsimtools.outputs.read_results_jsonl(out)}
        n = json.load(open(os.path.join(out, "sweep.json")))["points"]
        assert points == set(range(n)) - {1}, points
        failed = [json.loads(l) for l in open(os.path.join(out, "failed.jsonl"))]
        assert [f["point"] for f in failed] == [1], failed
        r = sweep(tdmsim, [spec, "--output", out])
        assert " 1 run now" in r.stdout, r.stdout
        assert not os.path.exists(os.path.join(out, "failed.jsonl"))
        check_files(out)
        print("the crashing point failed alone (exit 1); the re-run completed the sweep")
    elif mode == "values":
        os.makedirs(out)
        base = os.path.join(ROOT, "workloads", "scenarios", "qwen3-30b-a3b-decode-mi500x-tdm.yaml")
        ranged = os.path.join(out, "ranged.yaml")
        with open(ranged, "w") as f:
            f.write(f"name: ranged\nscenario: {base}\naxes:\n"
                    "  machine.memory.hbm.bandwidth: range(1TB/s, 2TB/s, +0.1TB/s)\n"
                    "  machine.launch.kernel_launch: [x0.00001]\n")
        r = sweep(tdmsim, [ranged, "--dry-run", "--output", os.path.join(out, "ranged")])
        got = re.findall(r"bandwidth=([^,]+),", r.stdout)
        assert got == [f"{v / 10:g}TB/s" for v in range(10, 21)], got
        # Two machine files sharing a name (one base, one changed key).
        machines = []
        for name, bw in (("a", "5.3TB/s"), ("b", "10TB/s")):
            machines.append(os.path.join(out, f"{name}.yaml"))
            with open(machines[-1], "w") as f:
                f.write(f"kind: machine\nbase: {ROOT}/workloads/machines/mi500x-tdm.yaml\n"
                        f"memory:\n  hbm:\n    bandwidth: {bw}\n")
        tiny = os.path.join(out, "tiny.yaml")
        with open(tiny, "w") as f:
            f.write(f"base: {base}\nname: tiny\ntokens: 4\npath: software\n")
        named = os.path.join(out, "named.yaml")
        with open(named, "w") as f:
            f.write(f"name: named\nscenario: {tiny}\naxes:\n  machine: [{machines[0]}, {machines[1]}]\n")
        folder = os.path.join(out, "named")
        sweep(tdmsim, [named, "--output", folder, "--quiet"])
        with open(os.path.join(folder, "results.csv")) as f:
            rows = list(csvmod.DictReader(f))
        assert [r["machine_ref"] for r in rows] == machines, [r.get("machine_ref") for r in rows]
        assert len({r["machine"] for r in rows}) == 1, "the files were to share a name"
        # Draws that would pass 2^64 - 1: refused at the repeat key, with its line.
        wrap = os.path.join(out, "wrap.yaml")
        with open(wrap, "w") as f:
            f.write(f"name: wrap\nscenario: {tiny}\nrepeat: 3\naxes:\n  scenario.seed: [18446744073709551615]\n")
        r = sweep(tdmsim, [wrap, "--dry-run", "--output", os.path.join(out, "wrap")], expect=2)
        assert re.search(r"wrap\.yaml:3:9: repeat: 3 draws of point 0", r.stderr), r.stderr
        # A relative path as an axis value is relative to the sweep file, which sets it
        # (here a copy of the base's trace beside the sweep; none beside the base).
        shutil.copy(os.path.join(ROOT, "workloads", "traces", "mixtral-8x7b-16tok.trace"),
                    os.path.join(out, "mine.trace"))
        traced = os.path.join(out, "traced.yaml")
        with open(traced, "w") as f:
            f.write(f"name: traced\nscenario: {ROOT}/workloads/scenarios/mixtral-8x7b-trace-mi300x.yaml\n"
                    "axes:\n  scenario.routing.trace: [mine.trace]\n")
        sweep(tdmsim, [traced, "--dry-run", "--output", os.path.join(out, "traced")])
        # The host-memory check run makes: a point over the limit refused before the folder.
        env = dict(os.environ, TDMSIM_MEMORY_LIMIT="10MiB")
        limited = os.path.join(out, "limited")
        r = sweep(tdmsim, [named, "--output", limited], env=env, expect=2)
        assert "point 0 (machine=" in r.stderr and "TDMSIM_MEMORY_LIMIT" in r.stderr, r.stderr
        assert not os.path.exists(limited), "a refused sweep made its folder"
        print("range steps, tiny factors, machine files of one name, seed wrap, relative paths and the memory "
              "limit as users meet them")
    elif mode == "plot":
        os.makedirs(out)
        csv = os.path.join(ref, "results.csv")
        for args, name in ((["--x", "tokens", "--y", "total_us", "--hue", "path", "--facet", "bandwidth"], "time.png"),
                           (["--x", "tokens", "--speedup", "--hue", "bandwidth"], "speedup.svg")):
            fig = os.path.join(out, name)
            tdmsimtools.expect_exit(tdmsim, "plot", csv, *args, "--output", fig)
            data = read(fig)
            assert data.startswith(b"\x89PNG") if name.endswith(".png") else b"<svg" in data[:2000], name
            assert len(data) > 5000, f"{name} is suspiciously small"
        r = tdmsimtools.tdmsim(tdmsim, "plot", csv, "--x", "no_such_column", "--output", os.path.join(out, "x.png"))
        assert r.returncode == 2 and "no column" in r.stderr, r.stderr
        # Rows of different configurations at one x (an axis given to neither --hue
        # nor --facet) would be joined into one zig-zag line: refused, naming them.
        r = tdmsimtools.tdmsim(tdmsim, "plot", csv, "--x", "tokens", "--hue", "path",
                               "--output", os.path.join(out, "z.png"))
        assert r.returncode == 2 and "differ in machine.memory.hbm.bandwidth" in r.stderr, r.stderr
        assert not os.path.exists(os.path.join(out, "z.png"))
        # A torn table (a row cut short) is bad input naming the file and line.
        torn = os.path.join(out, "torn.csv")
        with open(csv) as f:
            lines = f.read().splitlines()
        with open(torn, "w") as f:
            f.write("\n".join(lines[:3] + [lines[3][:40]]) + "\n")
        r = tdmsimtools.tdmsim(tdmsim, "plot", torn, "--x", "tokens", "--output", os.path.join(out, "t.png"))
        assert r.returncode == 2 and f"{torn}:4: row has" in r.stderr, r.stderr

        def refused(*args, says=()):
            """`tdmsim plot ARGS` is bad input: exit 2, stderr in tdmsim's form naming `says`."""
            r = tdmsimtools.tdmsim(tdmsim, "plot", *args)
            assert r.returncode == 2 and r.stderr.startswith(("tdmsim: error:", "usage:")), \
                (args, r.returncode, r.stderr)
            assert all(w in r.stderr for w in says), (args, r.stderr)
            return r

        def table(name, change):
            """results.csv with scenario.tokens (1, 4, 16) replaced by change[value]."""
            with open(csv) as f:
                lines = f.read().splitlines()
            col = lines[0].split(",").index("scenario.tokens")
            rows = [l.split(",") for l in lines[1:]]
            for r in rows:
                r[col] = change[r[col]]
            path = os.path.join(out, name)
            with open(path, "w") as f:
                f.write("\n".join([lines[0]] + [",".join(r) for r in rows]) + "\n")
            return path

        # Factors of the base's value (x0.8, a mode: oat sweep's axis) are numbers: the
        # x axis is ordered and spaced by them, not their categories in file order
        # (x1.2, x0.8, x1.01 were drawn so, and joined by one line). The SVG names each
        # tick label in a comment; the x axis's come before its label.
        factors = table("factors.csv", {"1": "x1.2", "4": "x0.8", "16": "x1.01"})
        fig = os.path.join(out, "factors.svg")
        tdmsimtools.expect_exit(tdmsim, "plot", factors, "--x", "scenario.tokens", "--hue", "path,bandwidth",
                                "--output", fig)
        texts = re.findall(r"<!-- (.*?) -->", read(fig).decode())
        ticks = texts[:next(i for i, t in enumerate(texts) if t.startswith("tokens"))]
        assert all(re.fullmatch(r"x[0-9.]+", t) for t in ticks), ticks
        values = [float(t[1:]) for t in ticks]
        assert values == sorted(values) and set(ticks) - {"x1.2", "x0.8", "x1.01"}, f"not a numeric axis: {ticks}"
        # Factors beside absolute values share no scale (the base's value is not in the
        # table): refused, naming both kinds, rather than drawn as categories in file order.
        mixed = table("mixed.csv", {"1": "x1.2", "4": "8", "16": "x0.8"})
        refused(mixed, "--x", "scenario.tokens", "--hue", "path,bandwidth", "--output", os.path.join(out, "mixed.svg"),
                says=("mixes factors of the base value", "x1.2", "8"))
        assert not os.path.exists(os.path.join(out, "mixed.svg"))
        # --force replaces only a regular file: not a symlink (it became a file where
        # the link was), and not the file this command reads (the table it plots).
        target = os.path.join(out, "target.txt")
        with open(target, "w") as f:
            f.write("keep")
        link = os.path.join(out, "link.png")
        os.symlink("target.txt", link)
        refused(csv, "--x", "tokens", "--speedup", "--hue", "bandwidth", "--output", link, "--force",
                says=(link, "not a regular file"))
        assert os.path.islink(link) and read(target) == b"keep", "--force replaced a symlink"
        # A folder where nothing can be created (root passes the permission check on
        # /proc): refused before the figure is drawn, exit 2.
        refused(csv, "--x", "tokens", "--speedup", "--hue", "bandwidth", "--output", "/proc/tdmsim-plot.png",
                says=("cannot write in folder /proc",))
        own = os.path.join(out, "own.svg")
        shutil.copy(csv, own)
        refused(own, "--x", "tokens", "--speedup", "--hue", "bandwidth", "--output", own, "--force",
                says=(own, "which this command reads"))
        assert read(own) == read(csv), "--force overwrote the table it plotted"
        # A logarithmic axis cannot show 0: refused, not left out of the figure unsaid.
        # (Each refusal writes to a figure of its own: one wrongly written would
        # not hide the next.)
        zero = table("zero.csv", {"1": "0", "4": "4", "16": "16"})
        refused(zero, "--x", "scenario.tokens", "--hue", "path", "--facet", "bandwidth", "--logx",
                "--output", os.path.join(out, "zero.png"), says=("--logx: column scenario.tokens has values <= 0",))
        # Contradictory scales, and --y with --speedup (which plots its own y), are refused.
        speedup = [csv, "--x", "tokens", "--speedup", "--hue", "bandwidth"]
        refused(*speedup, "--logx", "--linx", "--output", os.path.join(out, "xscale.png"), says=("--linx", "--logx"))
        refused(*speedup, "--logy", "--liny", "--output", os.path.join(out, "yscale.png"), says=("--liny", "--logy"))
        refused(*speedup, "--y", "floor_us", "--output", os.path.join(out, "y.png"), says=("--y", "--speedup"))
        # A sweep's folder is no run's (no summary.json): named, with the table to plot.
        r = refused(ref, "--output", os.path.join(out, "folder.png"), says=(csv,))
        assert "Errno" not in r.stderr, r.stderr
        # results.jsonl is no CSV table (read as one: a header of thousands of "columns").
        r = refused(os.path.join(ref, "results.jsonl"), "--x", "tokens", "--output", os.path.join(out, "jsonl.png"),
                    says=("not a CSV table", csv))
        assert len(r.stderr) < 500, r.stderr
        # A refused plot leaves no folder made for its output behind.
        refused(csv, "--x", "no_such_column", "--output", os.path.join(out, "new", "x.png"), says=("no column",))
        assert not os.path.exists(os.path.join(out, "new")), "a refused plot left its output's folder"
        made = [n for n in ("zero.png", "xscale.png", "yscale.png", "y.png", "folder.png", "jsonl.png")
                if os.path.exists(os.path.join(out, n))]
        assert not made, f"refused plots wrote {made}"
        print("tdmsim plot wrote a PNG and an SVG; x0.8-style factors are a numeric axis; refused mixed "
              "configurations, a torn table, a symlink or its own input as --force's output, --logx over 0, "
              "contradictory options, a sweep's folder and results.jsonl")
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
