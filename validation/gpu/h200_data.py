"""The recorded H200 MoE measurements (validation/data/h200/moe/) and the simulator's
predictions of them: one place for what compare_timing.py and validation/report.py
both need.

COMPARED_KERNELS is the single definition of which measured kernels make up the
layer time that is compared with the simulator's `h200` prediction: the kernels
the simulator models. When the simulator models another kernel (`zero_y`,
`quant_inter`), add it here and nowhere else.
"""
import csv
import glob
import json
import os
import sys
import re
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tdmsimtools  # noqa: E402
from tdmsimtools import ROOT, spearman  # noqa: E402,F401 (spearman: compare_timing.py, report.py)
from tdmsimtools import report  # noqa: E402

DATA_DIR = os.path.join(ROOT, "validation", "data", "h200", "moe")
SCENARIO_DIR = os.path.join(ROOT, "validation", "gpu", "scenarios")
INDEX_CSV = os.path.join(SCENARIO_DIR, "index.csv")

# Measured kernels (run.json timing.kernels_us_median keys) summed into the time
# compared with the simulator: all of them, since the simulator models the
# output clearing (`zero_y`, its `zero_out`) and the fp8 intermediate's
# quantisation kernel too (the machine's kernel profile, workloads/kernel-profiles/hopper.yaml; docs/moe-timing.md).
COMPARED_KERNELS = ("zero_y", "sort", "gate_up", "splitk_reduce", "quant_inter", "down", "fused")
ALL_KERNELS = ("zero_y", "sort", "gate_up", "splitk_reduce", "quant_inter", "down", "fused")


class DataError(Exception):
    """A missing or malformed input file (the message names it)."""


def one_gpu(scenario):
    """`--one-gpu` for an expert-parallel scenario (parallel.ep > 1), which was measured as
    GPU 0's share on one H200 (the gpu-case tdmsim-gpu ran), not as the layer on N GPUs;
    nothing for the others (tdmsim refuses the flag where it would change nothing)."""
    import yaml
    path, ep = scenario, None
    while path and ep is None:  # the file nearest the scenario's that sets it, through base:
        with open(path) as f:
            spec = yaml.safe_load(f) or {}
        ep = (spec.get("parallel") or {}).get("ep")
        base = spec.get("base")
        path = os.path.join(os.path.dirname(path), base) if base else None
    return ["--one-gpu"] if int(ep or 1) > 1 else []


def version_of(path):
    m = re.search(r"-v(\d+)\.[a-z]+$", os.path.basename(path))
    return int(m.group(1)) if m else -1


def versions(stem, ext, folder=DATA_DIR):
    """{version: path} of folder/STEM-vN.EXT."""
    return {version_of(p): p for p in glob.glob(os.path.join(folder, f"{stem}-v*.{ext}"))
            if version_of(p) >= 0}


def newest(stem, ext, folder=DATA_DIR, at_most=None):
    """The highest-numbered folder/STEM-vN.EXT (at most version at_most), or None."""
    v = {k: p for k, p in versions(stem, ext, folder).items() if at_most is None or k <= at_most}
    return v[max(v)] if v else None


def _open(path, what):
    if not path or not os.path.isfile(path):
        raise DataError(f"{path or what}: not found ({what})")
    return open(path)


def load_index(path=INDEX_CSV):
    """name -> row of validation/gpu/scenarios/index.csv (split, model, dtype, tokens, ...)."""
    with _open(path, "scenario index") as f:
        rows = list(csv.DictReader(f))
    for col in ("name", "split", "model", "dtype", "tokens", "routing", "tile"):
        if rows and col not in rows[0]:
            raise DataError(f"{path}: no column {col!r}")
    return {r["name"]: r for r in rows}


def forces_kernel(name, index_path=INDEX_CSV):
    """Whether scenario `name` (a YAML file beside the index) has a top-level
    `kernel:` key, i.e. sets some of the kernel configuration (tiles, split-K,
    buffers, raster group) instead of taking the plan heuristic's."""
    path = os.path.join(os.path.dirname(index_path), name + ".yaml")
    with _open(path, "scenario file") as f:
        return any(line.startswith("kernel:") for line in f)


def load_runs(path):
    """The run.json objects of a timing-vN.jsonl, in file order."""
    out = []
    with _open(path, "measured timing, one tdmsim-gpu run.json per line") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                j = json.loads(line)
                j["case"], j["timing"]["kernels_us_median"]
            except (ValueError, KeyError, TypeError) as e:
                raise DataError(f"{path}:{i}: not a tdmsim-gpu run.json line ({e})")
            out.append(j)
    return out


def measured_us(run, kernels=COMPARED_KERNELS):
    """The measured time compared with the simulator: the sum of `kernels`' medians."""
    return sum(v for k, v in run["timing"]["kernels_us_median"].items() if k in kernels)


def load_baselines(path):
    """name -> (torch_loop_us, torch_grouped_us), None where a value is empty."""
    out = {}
    with _open(path, "PyTorch baselines") as f:
        for r in csv.DictReader(f):
            val = lambda k: float(r[k]) if r.get(k) not in (None, "") else None
            out[r["name"]] = (val("torch_loop_us"), val("torch_grouped_us"))
    return out


def device_value(key, at_most=None):
    """(value, path) of the newest device-vN.txt (version <= at_most) with a
    `key value` line, or (None, None)."""
    for v, p in sorted(versions("device", "txt").items(), reverse=True):
        if at_most is not None and v > at_most:
            continue
        for line in open(p):
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return float(parts[1]), p
    return None, None


def predict(tdmsim, name, outdir, machine=None):
    """Simulates scenario `name` on its machine (`tdmsim run --path software`), or
    on the machine YAML `machine` instead, and returns predicted_us (the layer's
    total), the plan's weight_bytes (distinct experts touched) and useful_flops,
    the time per stage, the simulated kernels' names in launch order, and the
    wall time."""
    out = os.path.join(outdir, name)
    t0 = time.time()
    scenario = os.path.join(SCENARIO_DIR, name + ".yaml")
    s = tdmsimtools.run(tdmsim, scenario, out, path="software", machine=machine, label=name,
                        extra=one_gpu(scenario))
    path = s["paths"][0]
    stages = tdmsimtools.stage_times(s)
    layer = s["layer"]
    kernel = {k: layer.get(k) for k in KERNEL_KEYS}
    return dict(name=name, predicted_us=path["total_us"], weight_bytes=path["floor"]["weight_bytes"],
                useful_flops=path["floor"]["useful_flops"], stages_us=stages, kernel=kernel,
                kernels=[st["kernel"] for st in path["stages"]], sim_wall_s=time.time() - t0)


# The kernel configuration a run records (runs.jsonl `config`) and the
# simulator's summary.json `layer` both carry; a prediction is of the measured
# layer only when they agree.
KERNEL_KEYS = ("block_m", "stages", "split_k", "gate_up_tile", "down_tile", "pipeline_stages", "raster_group")


def kernel_mismatch(run, pred):
    """The kernel settings where the measured run and the prediction differ, as
    'key measured->predicted' strings (empty when they agree)."""
    cfg = run.get("config", {})
    return [f"{k} {cfg.get(k)}->{pred['kernel'].get(k)}" for k in KERNEL_KEYS
            if k in cfg and str(cfg.get(k)) != str(pred["kernel"].get(k))]


def predict_many(tdmsim, names, jobs=2, machine=None, label="H200", quiet=False):
    """predict() for every name, `jobs` at a time; {name: result}. Progress on stderr."""
    if not (os.path.isfile(tdmsim) and os.access(tdmsim, os.X_OK)):
        raise DataError(f"{tdmsim}: no tdmsim executable")
    with tempfile.TemporaryDirectory() as tmp:
        done = report.parallel(lambda n: predict(tdmsim, n, tmp, machine), names, jobs, label,
                               noun="scenarios", quiet=quiet)
    return {r["name"]: r for r in done}


def error_stats(rows):
    """rows: (measured, predicted) pairs -> n, MAPE (fraction), worst |error|, Spearman."""
    errs = [(p - m) / m for m, p in rows]
    return dict(n=len(rows), mape=sum(abs(e) for e in errs) / len(errs) if errs else float("nan"),
                worst=max((abs(e) for e in errs), default=float("nan")),
                spearman=spearman([m for m, _ in rows], [p for _, p in rows]) if len(rows) > 1 else float("nan"))
