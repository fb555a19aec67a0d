#!/usr/bin/env python3
"""Output handling of every command that writes output (issue 19, item 9).

    output_checks.py TDMSIM WORK MODE

MODE is one of:
  refuse   an existing output folder or file is refused (exit 2, names it,
           leaves it as it was) unless --force, which replaces a folder only
           where a tdmsim command wrote it (MARKER) or it is empty, and a file
           only where it is a regular one (not a FIFO)
  badpath  an output path under a file, or a file where a folder goes, exits 2
           naming the path and writes nothing
  enospc   a write that fails (the TDMSIM_TEST_FAIL_WRITE_AFTER test hook:
           ENOSPC after N bytes of a file) exits 1 naming the file and leaves
           neither the output nor a staging folder
  stale    hidden .NAME.tmp-PID siblings of dead processes are removed on
           start; those of live processes are kept
  signal   SIGINT, SIGTERM and SIGHUP during a run remove the staging folder
           and exit 128+signal
  stdout   standard output on a full disk (/dev/full) exits 1 with
           "tdmsim: error: writing standard output: No space left on device"
  plot     tdmsim plot refuses an existing figure without --force (exit 2),
           an output under a file or a folder as output (exit 2), and leaves no
           temporary file; exit 77 (skipped) without matplotlib
"""
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

TDMSIM, WORK, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "validation"))
import tdmsimtools  # noqa: E402
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCEN = os.path.join(ROOT, "validation/gpu/scenarios/qwen3-30b-64tok.yaml")
RUN_SCEN = os.path.join(ROOT, "workloads/scenarios/qwen3-30b-decode-h200.yaml")
DESC = os.path.join(ROOT, "validation/data/descriptors/example-moe.tdmm")
MARKER = ".tdmsim-output"  # apps/tdmsim/output_dir.h kOutputMarker


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args, env=None, stdout=True):
    e = dict(os.environ)
    e.update(env or {})
    p = tdmsimtools.tdmsim(TDMSIM, *args, env=e, timeout=300, stdout=stdout)
    return p.returncode, p.stderr


def expect(args, rc, stderr_has=(), env=None):
    got, err = run(args, env)
    if got != rc:
        fail(f"{' '.join(args)}: exit {got}, expected {rc}\n{err}")
    for s in stderr_has:
        if s not in err:
            fail(f"{' '.join(args)}: stderr lacks '{s}':\n{err}")
    return err


def siblings(path):
    """Hidden staging or temporary siblings of path."""
    d, name = os.path.split(path)
    return [f for f in os.listdir(d) if f.startswith("." + name + ".tmp")]


def fresh(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# Each folder command: its arguments before --output (fast settings).
FOLDER_CMDS = {
    "microbench": ["microbench", "copy", "--machine", "h200", "--bytes", "1MiB", "--quiet"],
    "run": ["run", RUN_SCEN, "--quiet"],
    "emulate": ["emulate", SCEN, "--quiet"],
    "gpu-case": ["gpu-case", SCEN, "--quiet"],
    # summary.json (about 1.5 KB) is written before config.json (about 4 KB).
    "collective": ["collective", "--machine", "mi300x", "--op", "all_to_all", "--bytes", "64MiB",
                   "--gpus", "8", "--quiet"],
}
# Each single-file command: its arguments before --output.
FILE_CMDS = {
    "config-show": ["config", "show", os.path.join(ROOT, "workloads/machines/mi300x.yaml")],
    "config-reference": ["config", "reference"],
    "describe": ["describe", DESC, "--format", "json"],
    "describe-example": ["describe", "--example", "moe"],
}


def mode_refuse():
    w = fresh("refuse")
    for name, args in FOLDER_CMDS.items():
        # A folder of the user's own: refused, and --force does not empty it.
        mine = os.path.join(w, name + "-mine")
        os.makedirs(mine)
        open(os.path.join(mine, "keep.txt"), "w").write("mine")
        expect(args + ["--output", mine], 2, [mine, "already exists", "--force"])
        expect(args + ["--output", mine, "--force"], 2, [mine, "exists without " + MARKER])
        if os.listdir(mine) != ["keep.txt"] or siblings(mine):
            fail(f"{name}: the refused folder changed: {os.listdir(mine)}, {siblings(mine)}")
        # An empty folder, then the folder a command wrote: --force replaces it.
        out = os.path.join(w, name)
        os.makedirs(out)
        expect(args + ["--output", out, "--force"], 0)
        if MARKER not in os.listdir(out):
            fail(f"{name}: the output folder has no {MARKER}: {os.listdir(out)}")
        open(os.path.join(out, "keep.txt"), "w").write("mine")
        expect(args + ["--output", out], 2, [out, "already exists", "--force"])
        if "keep.txt" not in os.listdir(out) or siblings(out):
            fail(f"{name}: the refused folder changed: {os.listdir(out)}, {siblings(out)}")
        expect(args + ["--output", out, "--force"], 0)
        if "keep.txt" in os.listdir(out) or len(os.listdir(out)) < 2 or siblings(out):
            fail(f"{name}: --force did not replace the folder: {os.listdir(out)}")
    for name, args in FILE_CMDS.items():
        out = os.path.join(w, name + ".out")
        open(out, "w").write("mine")
        expect(args + ["--output", out], 2, [out, "already exists", "--force"])
        if open(out).read() != "mine":
            fail(f"{name}: the refused file changed")
        expect(args + ["--output", out, "--force"], 0)
        if open(out, "rb").read() == b"mine" or siblings(out):
            fail(f"{name}: --force did not replace the file")
        # --force never turns a FIFO (or a device) into a plain file.
        fifo = os.path.join(w, name + ".fifo")
        os.mkfifo(fifo)
        expect(args + ["--output", fifo, "--force"], 2, [fifo, "not a regular file"])
        if not stat.S_ISFIFO(os.stat(fifo).st_mode) or siblings(fifo):
            fail(f"{name}: --force replaced a FIFO")


def mode_inputs():
    """--force never removes a file the command reads: not inside the folder it
    would replace, not as the file it would overwrite (exit 2, all kept)."""
    w = fresh("inputs")
    scenario = "name: small\nmachine: h200\nmodel: qwen3-30b-a3b\ntokens: 4\npath: software\n"
    traffic = "\n".join(",".join(["1000"] * 8) for _ in range(8)) + "\n"
    machine = open(os.path.join(ROOT, "workloads/machines/h200.yaml")).read()
    # Each folder command: (file name, its text, arguments reading it).
    cases = {
        "microbench": ("h200-copy.yaml", machine, lambda f: ["microbench", "copy", "--machine", f, "--bytes",
                                                              "1MiB", "--quiet"]),
        "run": ("s.yaml", scenario, lambda f: ["run", f, "--quiet"]),
        "emulate": ("s.yaml", scenario, lambda f: ["emulate", f, "--quiet"]),
        "gpu-case": ("s.yaml", scenario, lambda f: ["gpu-case", f, "--quiet"]),
        "collective": ("t.csv", traffic, lambda f: ["collective", "--machine", "mi300x", "--op", "all_to_all",
                                                    "--traffic", f, "--quiet"]),
    }
    for name, (file, text, args) in cases.items():
        out = os.path.join(w, name)
        outside = os.path.join(w, name + "-" + file)
        open(outside, "w").write(text)
        expect(args(outside) + ["--output", out], 0)
        inside = os.path.join(out, file)
        open(inside, "w").write(text)
        before = sorted(os.listdir(out))
        expect(args(inside) + ["--output", out, "--force"], 2, [inside, "which this command reads"])
        if sorted(os.listdir(out)) != before or open(inside).read() != text or siblings(out):
            fail(f"{name}: --force changed the folder holding its input: {os.listdir(out)}")
    # A request stream's arrival trace, read through the scenario.
    out = os.path.join(w, "serving")
    served = os.path.join(w, "served.yaml")
    open(served, "w").write(scenario + "serving:\n  arrival: trace\n  trace: serving/arrivals.csv\n")
    os.makedirs(out)
    open(os.path.join(out, MARKER), "w").write("")  # a folder a command wrote
    open(os.path.join(out, "arrivals.csv"), "w").write("0,1\n5,2\n")
    expect(["run", served, "--quiet", "--output", out, "--force"], 2, ["arrivals.csv", "which this command reads"])
    if not os.path.exists(os.path.join(out, "arrivals.csv")):
        fail("run --force removed the arrival trace it read")
    # Single output files: the file read is not the file written.
    desc = os.path.join(w, "d.tdmm")
    shutil.copy(DESC, desc)
    kept = open(desc, "rb").read()
    expect(["describe", desc, "--format", "json", "--output", desc, "--force"], 2, ["which this command reads"])
    scen = os.path.join(w, "s2.yaml")
    open(scen, "w").write("kind: scenario\n" + scenario.replace("h200", "mi500x-tdm").replace("software", "tdm"))
    expect(["run", scen, "--quiet", "--write-descriptors", scen, "--force"], 2, ["which this command reads"])
    expect(["config", "show", scen, "--output", scen, "--force"], 2, ["which this command reads"])
    # ... nor a file it was read from: the scenario's machine
    mach = os.path.join(w, "m.yaml")
    open(mach, "w").write(machine)
    scen_m = os.path.join(w, "s3.yaml")
    open(scen_m, "w").write("kind: scenario\n" + scenario.replace("machine: h200", "machine: m.yaml"))
    expect(["config", "show", scen_m, "--output", mach, "--force"], 2, ["which this command reads"])
    if open(mach).read() != machine:
        fail("config show overwrote the machine file it read")
    # ... nor a scenario that a tenants file or a sweep reads.
    tenants = os.path.join(w, "t.yaml")
    open(tenants, "w").write("kind: tenants\nname: t\nmachine: mi300x-dpx\npath: software\n"
                             "scenarios: [mixtral-8x7b-64tok-bf16-mi300x, s3.yaml]\npartitions: [0, 1]\n")
    sweep_file = os.path.join(w, "sw.yaml")
    open(sweep_file, "w").write("kind: sweep\nname: sw\nscenario: s3.yaml\naxes:\n  scenario.tokens: [1, 2]\n")
    kept_s3 = open(scen_m).read()
    expect(["config", "show", tenants, "--output", scen_m, "--force"], 2, ["s3.yaml", "which this command reads"])
    expect(["config", "show", sweep_file, "--output", scen_m, "--force"], 2, ["s3.yaml", "which this command reads"])
    if open(scen_m).read() != kept_s3:
        fail("config show overwrote a scenario a tenants file or sweep reads")
    # ... nor a machine only a sweep's machine axis names.
    axis_machine = os.path.join(w, "m2.yaml")
    open(axis_machine, "w").write(machine)
    sweep_axis = os.path.join(w, "sw2.yaml")
    open(sweep_axis, "w").write("kind: sweep\nname: sw2\nscenario: s3.yaml\naxes:\n  machine: [m.yaml, m2.yaml]\n")
    expect(["config", "show", sweep_axis, "--output", axis_machine, "--force"], 2, ["m2.yaml", "which this command reads"])
    if open(axis_machine).read() != machine:
        fail("config show overwrote a machine a sweep's axis reads")
    if open(desc, "rb").read() != kept or "tdm" not in open(scen).read():
        fail("an input was overwritten")
    # Nor is the folder's own marker a descriptor stream's name.
    out = os.path.join(w, "marker")
    expect(["run", scen, "--quiet", "--output", out, "--write-descriptors", os.path.join(out, MARKER)], 2,
           [MARKER])
    if os.path.exists(out):
        fail("the refused run wrote its folder")
    # Folders made for an output that then was not written go again: bad input
    # found after the folder was staged, a failed write of a single file.
    nested = os.path.join(w, "made", "for", "it")
    expect(["collective", "--machine", "h200", "--op", "all_to_all", "--bytes", "1MiB", "--gpus", "16",
            "--output", nested], 2, ["gpus_per_node"])
    expect(["describe", "--example", "moe", "--output", os.path.join(nested, "x.tdmm")], 1, [],
           env={"TDMSIM_TEST_FAIL_WRITE_AFTER": "10"})
    if os.path.exists(os.path.join(w, "made")):
        fail(f"folders made for a failed command were left: {os.listdir(os.path.join(w, 'made'))}")


def mode_badpath():
    w = fresh("badpath")
    a_file = os.path.join(w, "a-file")
    open(a_file, "w").write("x")
    for name, args in FOLDER_CMDS.items():
        expect(args + ["--output", os.path.join(a_file, "out")], 2, [a_file])
        expect(args + ["--output", a_file, "--force"], 2, [a_file, "not a folder"])
    for name, args in FILE_CMDS.items():
        expect(args + ["--output", os.path.join(a_file, "x.out")], 2, [a_file])
        expect(args + ["--output", w, "--force"], 2, [w, "is a folder"])
    if sorted(os.listdir(w)) != ["a-file"] or open(a_file).read() != "x":
        fail(f"something was written: {os.listdir(w)}")


def mode_enospc():
    w = fresh("enospc")
    # 2000 bytes: summary.json fits, stats.json (and every .npy array) does not,
    # so the failure comes after a first file was complete.
    hook = {"TDMSIM_TEST_FAIL_WRITE_AFTER": "2000"}
    for name, args in FOLDER_CMDS.items():
        out = os.path.join(w, name)
        expect(args + ["--output", out], 1, ["No space left on device"], env=hook)
        if os.path.exists(out) or siblings(out):
            fail(f"{name}: a failed write left {out} or {siblings(out)}")
        # With --force over an existing folder, the old one survives intact.
        os.makedirs(out)
        open(os.path.join(out, MARKER), "w").write("a tdmsim output")
        open(os.path.join(out, "keep.txt"), "w").write("mine")
        expect(args + ["--output", out, "--force"], 1, ["No space left on device"], env=hook)
        if sorted(os.listdir(out)) != sorted([MARKER, "keep.txt"]) or siblings(out):
            fail(f"{name}: a failed --force run changed {out}: {os.listdir(out)} {siblings(out)}")
    hook = {"TDMSIM_TEST_FAIL_WRITE_AFTER": "10"}
    for name, args in FILE_CMDS.items():
        out = os.path.join(w, name + ".out")
        expect(args + ["--output", out], 1, [out, "No space left on device"], env=hook)
        if os.path.exists(out) or siblings(out):
            fail(f"{name}: a failed write left {out} or {siblings(out)}")


def mode_stale():
    w = fresh("stale")
    child = subprocess.Popen(["true"])
    child.wait()
    dead, live = child.pid, os.getpid()
    for name in FOLDER_CMDS:
        out = os.path.join(w, name)
        for s in (f".{name}.tmp-{dead}", f".{name}.tmp-{dead}.old", f".{name}.tmp-{live}"):
            os.makedirs(os.path.join(w, s))
            open(os.path.join(w, s, "partial.json"), "w").write("{")
        expect(FOLDER_CMDS[name] + ["--output", out], 0)
        left = sorted(siblings(out))
        if left != [f".{name}.tmp-{live}"]:
            fail(f"{name}: expected only the live process's staging folder, found {left}")


def slow_command(out):
    # A GEMM big enough to take some seconds on the simulator (about 4 s of CPU
    # on the 2-core CI-class machine at 2026-12-04: 8192 x 8192 x 8192, 0.2 s by
    # then, ended before the signal came).
    return [TDMSIM, "microbench", "gemm", "--machine", "mi300x", "--M", "32768", "--N", "32768",
            "--K", "16384", "--quiet", "--output", out]


def mode_signal():
    w = fresh("signal")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        out = os.path.join(w, "out-" + sig.name)
        p = subprocess.Popen(slow_command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        staging = os.path.join(w, f".out-{sig.name}.tmp-{p.pid}")
        deadline = time.time() + 60
        while not os.path.isdir(staging):
            if p.poll() is not None or time.time() > deadline:
                p.kill()
                fail(f"{sig.name}: the staging folder {staging} never appeared (exit {p.poll()})")
            time.sleep(0.01)
        time.sleep(0.2)
        if p.poll() is not None:
            fail(f"{sig.name}: the command ended (exit {p.returncode}) before the signal; "
                 "slow_command needs a bigger GEMM")
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            fail(f"{sig.name}: still running 60 s after the signal")
        if p.returncode != 128 + sig:
            fail(f"{sig.name}: exit {p.returncode}, expected {128 + sig}\n{err}")
        if os.path.exists(out) or siblings(out):
            fail(f"{sig.name}: left {out} or {siblings(out)}")


def mode_stdout():
    for args in (["config", "list"],                      # fmt::print, one small buffer
                 ["config", "reference"],                 # std::cout, many buffers
                 ["describe", DESC, "--format", "json"],  # std::ostream
                 FOLDER_CMDS["microbench"][:-1],          # fmt::print after a simulation
                 ["--help"]):                             # CLI11's own output
        with open("/dev/full", "w") as full:
            rc, err = run(args, stdout=full)
        if rc != 1 or "tdmsim: error: writing standard output: No space left on device" not in err:
            fail(f"{' '.join(args)} > /dev/full: exit {rc}\n{err}")
    # Bad input stays exit 2 even when stdout fails too.
    with open("/dev/full", "w") as full:
        rc, _ = run(["config", "show", "/nonexistent.yaml"], stdout=full)
    if rc != 2:
        fail(f"bad input with stdout on /dev/full: exit {rc}, expected 2")


def mode_plot():
    w = fresh("plot")
    csv = os.path.join(w, "results.csv")
    open(csv, "w").write("tokens,total_us,path\n1,10,software\n2,20,software\n4,35,software\n")
    fig = os.path.join(w, "fig.png")
    args = ["plot", csv, "--x", "tokens", "--y", "total_us", "--output", fig]
    rc, err = run(args)
    if rc == 1 and "matplotlib is missing" in err:
        print("skipped: no matplotlib")
        sys.exit(77)
    if rc != 0 or not open(fig, "rb").read().startswith(b"\x89PNG"):
        fail(f"plot: exit {rc}\n{err}")
    first = os.path.getmtime(fig)
    expect(args, 2, [fig, "already exists", "--force"])
    if os.path.getmtime(fig) != first:
        fail("plot: the refused figure changed")
    expect(args + ["--force"], 0)
    a_file = os.path.join(w, "a-file")
    open(a_file, "w").write("x")
    expect(args[:-1] + [os.path.join(a_file, "fig.png")], 2, [a_file])
    expect(args[:-1] + [w, "--force"], 2, [w, "is a folder"])
    fifo = os.path.join(w, "fig.fifo.png")
    os.mkfifo(fifo)
    expect(args[:-1] + [fifo, "--force"], 2, [fifo, "not a regular file"])
    if not stat.S_ISFIFO(os.stat(fifo).st_mode):
        fail("plot: --force replaced a FIFO")
    if siblings(fig) or siblings(fifo):
        fail(f"plot left {siblings(fig) + siblings(fifo)}")


if not os.path.exists(TDMSIM):
    fail(f"{TDMSIM} not found")
os.makedirs(WORK, exist_ok=True)
{"refuse": mode_refuse, "inputs": mode_inputs, "badpath": mode_badpath, "enospc": mode_enospc, "stale": mode_stale,
 "signal": mode_signal, "stdout": mode_stdout, "plot": mode_plot}[MODE]()
print("ok")
