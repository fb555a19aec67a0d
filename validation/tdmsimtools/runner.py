"""Starting tdmsim and reading its summary.json.

All calls take the tdmsim executable's path first (scripts get it from --tdmsim or
from CTest), raise RunError naming what was run when tdmsim fails, and never parse
tdmsim's console text: the figures come from summary.json.
"""
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_TDMSIM = os.path.join(ROOT, "build", "apps", "tdmsim", "tdmsim")


class RunError(RuntimeError):
    """tdmsim exited non-zero; the message names the run, the exit code and tdmsim's error."""

    def __init__(self, label, returncode, stderr):
        super().__init__(f"{label}: tdmsim failed (exit {returncode}): {stderr.strip()}")
        self.returncode = returncode
        self.stderr = stderr


def tdmsim(binary, *args, check=False, label=None, env=None, timeout=None, stdout=True):
    """Runs `binary args...` capturing text stderr and stdout (stdout=False discards
    stdout; an open file receives it); returns the CompletedProcess. With check, a
    non-zero exit raises RunError (label names the run; by default the command's first
    two words)."""
    out = subprocess.PIPE if stdout is True else subprocess.DEVNULL if stdout is False else stdout
    p = subprocess.run([binary, *map(str, args)], stdout=out, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise RunError(label or " ".join(map(str, args[:2])), p.returncode, p.stderr)
    return p


def expect_exit(binary, *args, rc=0, env=None, timeout=None):
    """For tests: runs tdmsim like tdmsim() and stops the test (SystemExit, with the
    command, stdout and stderr) unless it exits with `rc`."""
    p = tdmsim(binary, *args, env=env, timeout=timeout)
    if p.returncode != rc:
        raise SystemExit(f"FAILED: exit {p.returncode}, expected {rc}: {os.path.basename(binary)} "
                         f"{' '.join(map(str, args))}\n{p.stdout}\n{p.stderr}")
    return p


def write_text(path, text):
    """For tests: writes `text` to `path` (a scenario, machine or trace made on the fly); returns path."""
    with open(path, "w") as f:
        f.write(text)
    return path


def read_summary(folder):
    """The summary.json that a tdmsim command wrote into `folder`, as a dict."""
    with open(os.path.join(folder, "summary.json")) as f:
        return json.load(f)


def run(binary, scenario, out, *, path=None, machine=None, extra=(), label=None, quiet=True, force=True):
    """`tdmsim run SCENARIO --output OUT` (with --path, --machine and extra arguments
    when given); returns its summary.json."""
    cmd = ["run", scenario]
    if path:
        cmd += ["--path", path]
    if quiet:
        cmd.append("--quiet")
    if force:
        cmd.append("--force")
    cmd += ["--output", out]
    if machine:
        cmd += ["--machine", machine]
    cmd += list(extra)
    tdmsim(binary, *cmd, check=True, label=label or os.path.basename(scenario))
    return read_summary(out)


def microbench(binary, kind, machine, args=(), out=None):
    """`tdmsim microbench KIND --machine MACHINE ARGS --output OUT --quiet`; returns its
    summary.json. Without `out` the run writes into a temporary folder, removed after."""
    if out is None:
        with tempfile.TemporaryDirectory() as d:
            # tdmsim refuses to write into an existing folder unless forced: a fresh one inside
            return microbench(binary, kind, machine, args, os.path.join(d, "run"))
    tdmsim(binary, "microbench", kind, "--machine", machine, *args, "--output", out, "--quiet",
           check=True, label=f"microbench {kind} --machine {machine} {' '.join(map(str, args))}".rstrip())
    return read_summary(out)


def gpu_case(binary, scenario, out):
    """`tdmsim gpu-case SCENARIO --output OUT -q`: the case folder for the GPU runner."""
    tdmsim(binary, "gpu-case", scenario, "--output", out, "-q", check=True,
           label=f"gpu-case {os.path.basename(scenario)}")
    return out


def gpu_run(runner, case, out, args=()):
    """The GPU runner (`tdmsim-gpu CASE --output OUT ARGS`, on a GPU machine) on a case
    folder from gpu_case(); returns its run.json. The runner writes into an existing
    folder, so OUT is created first."""
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([runner, case, "--output", out, *map(str, args)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RunError(f"{os.path.basename(runner)} {os.path.basename(case)}", p.returncode, p.stderr)
    with open(os.path.join(out, "run.json")) as f:
        return json.load(f)


def kernel_us(stage):
    """A summary stage's kernel time: its time without the host launch overhead."""
    return stage["time_us"] - stage["launch_overhead_us"]


def stage_times(summary, path_index=0, kernel_only=False):
    """{stage name: time in us} of one path of a `tdmsim run` summary; stages of the
    same name (one per layer or expert group) are summed. kernel_only: without launch
    overhead."""
    out = {}
    for st in summary["paths"][path_index]["stages"]:
        out[st["stage"]] = out.get(st["stage"], 0.0) + (kernel_us(st) if kernel_only else st["time_us"])
    return out
