#!/usr/bin/env python3
"""Every numeric machine and model parameter changes a result (issue #22 part 1).

Reads the parameters from `tdmsim config reference` (the Machine and Model tables),
and for each numeric one (integer, number, frequency, size, bandwidth, duration) not
declared "not modelled" in its description, sets it to another value in an overlay
of a shipped machine or model and runs a shipped scenario or microbenchmark (a probe)
with it: the parameter passes when the probe's summary.json differs from the
unperturbed run's (host wall time and file names left out). A description that says
"not modelled" (other than "0: not modelled", which names a value that switches a
modelled effect off) declares the parameter inert, and it is skipped.

The value: the resolved value x 0.5, else x 2 (a 0 becomes 1). The probe: KEY_PROBES
below for keys that bind only on some machine or layer (a per-key table, never a
declaration that they are inert), else DEFAULT_PROBES in order. The first value is
tried on every probe before the second on any; the first run that loads and changes
its probe passes the parameter (for a KEY_PROBES entry marked "refuses", so does a
refusal that names the key).

Usage: perturb_checks.py TDMSIM WORKDIR [--only KEY...] [--probes NAME...] [--ignore-declaration KEY...] [--list]
Exit 1, naming them, when some parameter changes nothing. (--ignore-declaration checks a
key declared not modelled all the same: the test's own check that it fails on an inert key.)"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "validation"))
import tdmsimtools  # noqa: E402

SC = os.path.join(ROOT, "workloads", "scenarios")
MACHINES = os.path.join(ROOT, "workloads", "machines")
MODELS = os.path.join(ROOT, "workloads", "models")
GPU_SC = os.path.join(ROOT, "validation", "gpu", "scenarios")
PERTURB = os.path.join(ROOT, "tests", "data", "perturb")
FORMATS = os.path.join(ROOT, "tests", "data", "formats")
SLOTM_DSV3 = os.path.join(ROOT, "tests", "data", "slot-models", "deepseek-v3-decode-mi500x-tdm.yaml")

# name: (kind, what, machine, model, extra arguments)
#   kind "run": `tdmsim run SCENARIO ARGS`; kind "microbench": `tdmsim microbench WHAT --machine ... ARGS`;
#   kind "emulate": `tdmsim emulate SCENARIO` (the layer's numerics); kind "collective":
#   `tdmsim collective --machine ... ARGS` (the interconnect's keys)
PROBES = {
    "h200": ("run", f"{SC}/qwen3-30b-decode-h200.yaml", "h200", "qwen3-30b-a3b", ["--path", "software"]),
    "mi300x": ("run", f"{SC}/mixtral-8x7b-64tok-bf16-mi300x.yaml", "mi300x", "mixtral-8x7b", []),
    "mi355x": ("run", f"{SC}/deepseek-v3-decode-mi355x.yaml", "mi355x", "deepseek-v3", []),
    # a partition of an MI300X in DPX/NPS1 whose traffic crosses the IOD links (memory.fabric.iods)
    "mi300x_dpx": ("run", f"{SC}/mixtral-8x7b-64tok-bf16-mi300x.yaml", "mi300x-dpx", "mixtral-8x7b", []),
    "tdm": ("run", f"{SC}/qwen3-30b-a3b-decode-mi500x-tdm.yaml", "mi500x-tdm", "qwen3-30b-a3b", ["--path", "both"]),
    "tdm_dsv3": ("run", SLOTM_DSV3, "mi500x-tdm", "deepseek-v3", ["--path", "tdm"]),
    "chase_l1": ("microbench", "chase", "h200", None, ["--footprint", "24KiB", "--hops", "4000"]),
    # H200 layers of validation/gpu/scenarios (our kernels' fp8, 1-stage and bf16 wgmma paths)
    "h200_fp8": ("run", f"{GPU_SC}/dsv3-fp8-64tok.yaml", "h200", None, ["--path", "software"]),
    "h200_1stage": ("run", f"{GPU_SC}/dsv3-fp8-4tok-1stage-pt.yaml", "h200", None, ["--path", "software"]),
    "h200_splitk": ("run", f"{GPU_SC}/qwen3-30b-64tok-t16x64x128k2.yaml", "h200", None, ["--path", "software"]),
    "h200_bf16": ("run", f"{GPU_SC}/dsv2-lite-1024tok.yaml", "h200", None, ["--path", "software"]),
    # the functional emulator: the numerics of a layer (model keys that shape values, not time)
    "emulate_qwen": ("emulate", f"{SC}/qwen3-30b-decode-h200.yaml", "h200", "qwen3-30b-a3b", []),
    "emulate_gptoss": ("emulate", f"{GPU_SC}/gpt-oss-20b-1tok.yaml", "h200", "gpt-oss-20b", []),
    # a GEMM long and wide enough that the H200's power limit holds its clock down
    "gemm_h200": ("microbench", "gemm", "h200", None, ["--M", "4096", "--N", "4096", "--K", "4096"]),
    "gemm_h200_fp8": ("microbench", "gemm", "h200", None,
                      ["--M", "4096", "--N", "4096", "--K", "4096", "--dtype", "fp8_e4m3"]),
    # mixed pairs whose weights are dequantised in registers (the format CLI tests' layers)
    "a16w4": ("run", f"{PERTURB}/a16w4-2048tok.yaml", "mi355x", None, []),
    "int4": ("run", f"{FORMATS}/bf16-int4-g128.yaml", "mi355x", None, []),
    # the interconnect (sim/net): an all-to-all on one node, and on two (the NIC)
    "collective": ("collective", None, "mi300x", None, ["--op", "all_to_all", "--bytes", "64MiB", "--gpus", "8"]),
    "collective_h200": ("collective", None, "h200", None, ["--op", "all_to_all", "--bytes", "64MiB", "--gpus", "8"]),
    "collective_2nodes": ("collective", None, "h200", None,
                          ["--op", "all_to_all", "--bytes", "64MiB", "--gpus", "16", "--nodes", "2"]),
    # split-K 2 variants of shipped layers (tests/data/perturb): the AMD reduction kernel,
    # and the H200 warp-specialized gate/up writing fp32 partial sums
    "mi300x_splitk2": ("run", f"{PERTURB}/qwen3-235b-tp4-decode-mi300x-splitk2.yaml", "mi300x", None, []),
    "h200_ws_splitk2": ("run", f"{PERTURB}/dsv2-lite-1024tok-ws-splitk2.yaml", "h200", None, ["--path", "software"]),
}
INTERCONNECT_PROBES = ["collective", "collective_h200", "collective_2nodes"]
DEFAULT_PROBES = ["h200", "mi300x", "tdm", "mi355x", "chase_l1", "h200_fp8", "h200_1stage", "h200_bf16", "h200_splitk"]

MMA_SYNC = {"kernels.matrix_instructions": "mma_sync", "kernels.warp_specialized": False}

# Keys that bind only on some machine or layer: the probe that shows them, other keys
# set alongside in both runs (machine keys, as in tests/cli/slot-models.cmake), and the
# values to try (else x 0.5, x 2).
KEY_PROBES = {
    # bf16 wgmma loops that are not warp-specialized (those take wgmma_ws_efficiency)
    "kernels.wgmma_efficiency": {"probe": "h200_bf16", "with": {"kernels.warp_specialized": False}},
    # fp8 operands converted to f16 on the mma.sync tiles: the H200's kernels without wgmma
    # (warp_specialized needs wgmma), where every tile runs mma.sync
    "kernels.fp8_conversions_per_clock": {"probe": "h200_fp8", "with": MMA_SYNC},
    "kernels.nvidia.main_loop.fragment_convert_ops": {"probe": "h200_fp8", "with": MMA_SYNC},
    "kernels.nvidia.main_loop.scale_apply_ops": {"probe": "h200_fp8", "with": MMA_SYNC},
    "kernels.nvidia.epilogue.ws_gate_up_partial_ops": {"probe": "h200_ws_splitk2"},
    "tdm.mover_bytes_per_clock": {"probe": "tdm_dsv3", "values": [1]},
    "tdm.routing_scores_per_clock": {"probe": "tdm", "values": [1]},
    # The L2 asks the MALL for whole 128-byte lines: a MALL line of 32-128 bytes answers
    # them alike; a longer one fetches neighbours that later requests hit.
    "memory.mall.line": {"probe": "mi300x", "values": ["512B"]},
    # only machines that state the links between I/O dies have them (the shipped mi300x-dpx);
    # at its 5.4 TB/s they do not bind, so the IOD count is probed on slower links
    "memory.fabric.iods.count": {"probe": "mi300x_dpx", "with": {"memory.fabric.iods.link_bandwidth": "1TB/s"}},
    "memory.fabric.iods.link_bandwidth": {"probe": "mi300x_dpx"},
    "kernels.sort.rows_per_workgroup": {"probe": "mi300x", "values": [1]},
    "kernels.epilogue.reduce_ops": {"probe": "mi300x_splitk2"},
    "gating.routed_scaling": {"probe": "emulate_qwen"},
    "activation_limit": {"probe": "emulate_gptoss"},
    "power.sustained_clock": {"probe": "gemm_h200"},
    "power.reference_utilisation": {"probe": "gemm_h200"},
    "power.narrow_matrix_activity": {"probe": "gemm_h200_fp8"},
    "tdm.routing_latency": {"probe": "tdm", "values": ["20us"]},
    # The decode probe's layer gives the same result with 2-8 us slots (docs/studies "slot
    # models": the slot length binds from 16 us), so a long slot is what shows it
    "tdm.slot_length": {"probe": "tdm", "values": ["20us"]},
    "tdm.slots": {"probe": "tdm", "with": {"tdm.slot_length": "50us"}, "values": [1, 16]},
    "tdm.movers_per_cu": {"probe": "tdm_dsv3", "with": {"tdm.mover_bytes_per_clock": 1}},
    "tdm.queue_depth": {"probe": "tdm_dsv3", "values": [1]},
    # in-register dequantisation: bf16 activations with mxfp4 or int4 weights
    "kernels.dequant.fp4_ops": {"probe": "a16w4"},
    "kernels.dequant.int4_ops": {"probe": "int4"},
    # wgmma loops take at least 3 buffers; 6 does not fit the probe's tiles in LDS (lowered to 4)
    "kernels.wgmma_pipeline_stages": {"probe": "h200_bf16", "values": [3]},
    # A limit: a value below the probe's workgroups makes the run refuse them, naming the key.
    "compute.max_workgroup_threads": {"probe": "h200", "values": [32], "refuses": True},
    # A limit: more GPUs on one node than it are refused, naming the key.
    "interconnect.gpus_per_node": {"probe": "collective_h200", "values": [4], "refuses": True},
    # A limit: a layer whose weights and activations exceed it is refused, naming the key.
    "memory.hbm.capacity": {"probe": "mi355x", "values": ["4GiB"], "refuses": True},
}


def reference_rows(binary):
    """(section, key, type, description) of every parameter row of the reference."""
    text = tdmsimtools.expect_exit(binary, "config", "reference").stdout
    section, rows = None, []
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].split(" (")[0].strip()
            continue
        m = re.match(r"^\| `([^`]+)` \| ([^|]*) \| ([^|]*) \| ([^|]*) \| (.*) \|$", line)
        if m and section in ("Machine", "Model"):
            rows.append((section, m.group(1), m.group(2).strip(), m.group(5).strip()))
        elif m and section == "Kernel profile":  # a profile's KEY is the machine's kernels.KEY
            rows.append(("Machine", "kernels." + m.group(1), m.group(2).strip(), m.group(5).strip()))
    return rows


NUMERIC = ("integer", "number", "frequency", "size", "bandwidth", "duration", "time")


def numeric(type_text):
    return type_text.split(" ")[0] in NUMERIC


def declared_inert(doc):
    return re.search(r"(?<!0: )not modelled", doc) is not None


def lookup(tree, key):
    for part in key.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def scaled(value, factor, integer):
    """`value` (a number, or a number with a unit as config show prints it) x factor."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if value == 0:
            return 1
        v = value * factor
        return max(1, round(v)) if integer else v
    m = re.match(r"^([0-9.eE+-]+)\s*([A-Za-z/%]*)$", str(value))
    if not m:
        return None
    num = float(m.group(1))
    if num == 0:
        return f"1{m.group(2)}" if m.group(2) else 1
    v = num * factor
    if m.group(2) in ("B", "KiB", "MiB", "GiB", "KB", "MB", "GB"):  # sizes are whole bytes
        v = max(1, round(v))
    return f"{v:g}{m.group(2)}"


def yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v) if isinstance(v, str) else str(v)


def nested(keys):
    """YAML text of a dotted-key dict."""
    tree = {}
    for k, v in keys.items():
        node = tree
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v

    def emit(node, indent):
        out = ""
        for k, v in node.items():
            if isinstance(v, dict):
                out += f"{' ' * indent}{k}:\n" + emit(v, indent + 2)
            else:
                out += f"{' ' * indent}{k}: {yaml_value(v)}\n"
        return out
    return emit(tree, 0)


def strip(v):
    """A summary without what names files or measures the host."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("simulation_wall_s", "files", "machine_file", "timings_s")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


class Runner:
    def __init__(self, binary, work):
        self.binary, self.work, self.n = binary, work, 0
        self.base = {}
        self.resolved = {}
        self.last_stderr = ""
        self.tolerate = False  # a failing run is an answer (a limit the probe's work exceeds)

    def resolve(self, kind, name):
        """The resolved machine or model as `tdmsim config show --format json` prints it."""
        if (kind, name) not in self.resolved:
            folder = MACHINES if kind == "Machine" else MODELS
            out = tdmsimtools.expect_exit(self.binary, "config", "show", f"{folder}/{name}.yaml",
                                          "--format", "json").stdout
            self.resolved[(kind, name)] = json.loads(out)
        return self.resolved[(kind, name)]

    def run(self, probe, machine_keys, model_keys):
        """The probe's stripped summary with these keys set (None: the overlay failed to load).
        The unperturbed run goes through overlays too, so that the runs differ in the keys alone."""
        kind, what, machine, model, extra = PROBES[probe]
        self.n += 1
        d = os.path.join(self.work, f"r{self.n}")
        os.makedirs(d, exist_ok=True)
        mpath = os.path.join(d, "machine.yaml")
        with open(mpath, "w") as f:
            f.write(f"base: {MACHINES}/{machine}.yaml\n" + nested(machine_keys))
        target = what
        if kind in ("run", "emulate") and model is not None:
            mo = os.path.join(d, "model.yaml")
            with open(mo, "w") as f:
                f.write(f"base: {MODELS}/{model}.yaml\n" + nested(model_keys))
            target = os.path.join(d, "scenario.yaml")
            with open(target, "w") as f:
                f.write(f"base: {what}\nmodel: {mo}\n")
        out = os.path.join(d, "out")
        if kind == "run":
            cmd = ["run", target, "--machine", mpath, "--quiet", "--force", "--output", out, *extra]
        elif kind == "emulate":
            cmd = ["emulate", target, "--quiet", "--force", "--output", out, *extra]
        elif kind == "collective":
            cmd = ["collective", "--machine", mpath, *extra, "--quiet", "--force", "--output", out]
        else:
            cmd = ["microbench", what, "--machine", mpath, *extra, "--quiet", "--force", "--output", out]
        p = tdmsimtools.tdmsim(self.binary, *cmd)
        self.last_stderr = p.stderr
        if p.returncode == 2 or (p.returncode != 0 and self.tolerate):
            return None  # the value is out of range or inconsistent: another value is tried
        if p.returncode != 0:
            raise SystemExit(f"FAILED: exit {p.returncode}: tdmsim {' '.join(cmd)}\n{p.stderr}")
        with open(os.path.join(out, "summary.json")) as f:
            return json.dumps(strip(json.load(f)), sort_keys=True).replace(d, "RUN")

    def baseline(self, probe, with_keys):
        k = (probe, json.dumps(with_keys, sort_keys=True))
        if k not in self.base:
            self.base[k] = self.run(probe, dict(with_keys), {})
        return self.base[k]


def check(r, section, key, integer, default_probes):
    """The probe and value that change a result, or None."""
    spec = KEY_PROBES.get(key, {})
    probes = [spec["probe"]] if "probe" in spec else default_probes
    if "probe" not in spec and key.startswith("interconnect."):
        probes = INTERCONNECT_PROBES  # the collective command: the model expert-parallel layers call
    with_keys = spec.get("with", {})
    # Each probe's values to try: the key's value there x 0.5, else x 2.
    tries = []
    for probe in probes:
        _, _, machine, model, _ = PROBES[probe]
        if section == "Model" and model is None:
            continue
        current = lookup(r.resolve(section, machine if section == "Machine" else model), key)
        if current is None:
            continue  # an optional section this machine lacks
        values = spec.get("values") or [v for v in (scaled(current, 0.5, integer), scaled(current, 2, integer))
                                        if v is not None and v != current]
        tries.append((probe, current, values))
    # The first value on every probe before the second on any: a key that binds
    # only on a later probe costs one run on each earlier one, not two.
    for i in range(max((len(values) for _, _, values in tries), default=0)):
        for probe, current, values in tries:
            if i >= len(values):
                continue
            v = values[i]
            base = r.baseline(probe, with_keys)
            r.tolerate = bool(spec.get("refuses"))
            if section == "Machine":
                got = r.run(probe, {**with_keys, key: v}, {})
            else:
                got = r.run(probe, dict(with_keys), {key: v})
            r.tolerate = False
            if got is not None and got != base:
                return probe, current, v
            if got is None and spec.get("refuses") and key in r.last_stderr:
                return probe, current, f"{v} (refused, naming the key)"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tdmsim")
    ap.add_argument("work")
    ap.add_argument("--only", nargs="*", help="check only these keys")
    ap.add_argument("--probes", nargs="*", default=DEFAULT_PROBES, choices=sorted(PROBES),
                    help="the probes tried for keys without a KEY_PROBES entry, in order")
    ap.add_argument("--ignore-declaration", nargs="*", default=[], metavar="KEY",
                    help="check these keys although declared not modelled")
    ap.add_argument("--list", action="store_true", help="list the keys that would be checked")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = [(s, k, t, d) for s, k, t, d in reference_rows(a.tdmsim) if numeric(t)]
    if a.only:
        rows = [row for row in rows if row[1] in a.only]
        if not rows:
            sys.exit(f"FAILED: no numeric machine or model parameter named {' '.join(a.only)}")
    r = Runner(a.tdmsim, a.work)
    failed, skipped = [], []
    for section, key, type_text, doc in rows:
        if declared_inert(doc) and key not in a.ignore_declaration:
            skipped.append(key)
            continue
        if a.list:
            print(f"{section.lower()} {key}")
            continue
        found = check(r, section, key, type_text.startswith("integer"), a.probes)
        if found:
            probe, old, new = found
            print(f"ok   {section.lower()} {key}: {old} -> {new} changes {probe}")
        else:
            print(f"FAIL {section.lower()} {key}: no probe changes")
            failed.append(key)
        sys.stdout.flush()
    print(f"{len(rows) - len(skipped) - len(failed)} parameters change a result; "
          f"{len(skipped)} declared not modelled ({', '.join(skipped)}); {r.n} runs")
    if failed:
        sys.exit(f"FAILED: these parameters change no probe and are not declared 'not modelled' in the "
                 f"reference: {', '.join(failed)}")


if __name__ == "__main__":
    main()
