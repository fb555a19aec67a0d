#!/usr/bin/env python3
"""Plots a sweep's results.csv (tdmsim sweep) with matplotlib (Debian python3-matplotlib).

  plot_sweep.py results.csv --x tokens --y total_us --hue path --facet model --output fig.png
  plot_sweep.py results.csv --x tokens --speedup --hue model --output speedup.svg
  plot_sweep.py results.csv --x zipf_s --hue path,tokens --facet model --output skew.png
  plot_sweep.py sensitivity.csv --output tornado.png


Columns are named as in results.csv; an axis column may be named by its last part
(`bandwidth` for `machine.memory.hbm.bandwidth`). Values with units (4TB/s, 2100MHz)
are plotted as numbers in their unit, which labels the axis. Logarithmic axes are
chosen when the values span a factor of 16 or more (force with --logx/--logy,
--linx/--liny). --speedup plots the software path's time over the TDM path's for
rows that differ only in their path. A sweep with `repeat: N` has each point's mean
and 95% confidence interval: the line is the mean and a shaded band the interval
(columns Y_ci95_low and Y_ci95_high beside Y; tdm_speedup_ci95_* for --speedup).
A one-at-a-time sweep's sensitivity.csv is drawn as a tornado: one bar per
parameter from its low value's speedup to its high value's, around the base's,
largest swing on top. A run folder of `tdmsim run --path both --output DIR` (or
its summary.json) is drawn as a waterfall from the software path's time, cause by
cause (summary.json's tdm_vs_software), to the TDM path's.
`tdmsim plot ...` runs this script.

  plot_sweep.py out-run --output causes.png
Exit codes: 0 ok, 2 bad input (unknown column, nothing to plot, an output that
is not a regular file or is the input)."""
import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
import stat
import sys
from collections import OrderedDict, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tdmsimtools import outputs  # noqa: E402

LABELS = {
    "total_us": "layer time (us)", "floor_us": "physical floor (us)", "over_floor": "time / floor",
    "achieved_tflops": "achieved TFLOP/s", "hbm_tbps": "HBM TB/s", "hbm_bytes": "HBM bytes",
    "cu_utilization": "CU utilization", "matrix_utilization": "matrix-pipe utilization",
    "bubble_fraction": "bubble fraction", "l2_hit_rate": "L2 hit rate", "mall_hit_rate": "MALL hit rate",
    "hbm_row_hit_rate": "HBM row-buffer hit rate", "padding_waste": "padding waste",
    "load_max_over_mean": "expert load max/mean", "tokens": "tokens", "speedup": "TDM speedup over software (x)",
    "machine.memory.hbm.bandwidth": "HBM peak bandwidth", "machine.compute.cus_per_die": "CUs per die",
    "machine.compute.clock": "engine clock", "scenario.routing.zipf_s": "routing skew (Zipf s)",
    "scenario.tokens": "tokens",
}
# Unit -> (base unit, factor): values of one column are shown in its most common unit.
UNITS = {}
for base, table in {
    "Hz": {"Hz": 1, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9},
    "B": {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20,
          "GiB": 2**30, "TiB": 2**40},
    "B/s": {"B/s": 1, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12, "GiB/s": 2**30, "TiB/s": 2**40},
    "s": {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1},
}.items():
    for u, f in table.items():
        UNITS[u] = (base, f)
NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")
# A factor of the base's value (`x0.8`, a `mode: oat` sweep's axis; jitter adds x0.99 and
# x1.01): plotted at the factor, so that the points are ordered and spaced by it (as
# categories they were drawn in file order, x0.8, x1.2, x0.99, x1.01, and joined so).
FACTOR = re.compile(r"^\s*x\s*((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
FACTOR_UNIT = "x base"  # a unit no NUMBER match can give (it has a space)


# Run by `tdmsim plot` (which sets TDMSIM_PLOT_PROG): errors read as tdmsim's own do.
ERROR = "tdmsim: error:" if os.environ.get("TDMSIM_PLOT_PROG") else "plot_sweep: error:"


def fail(msg):
    print(f"{ERROR} {msg}", file=sys.stderr)
    sys.exit(2)


def check_output(path, force, inputs):
    """An unusable --output is bad input (exit 2), found before any work. Nothing is
    made here: the figure's folder is made when it is written (save_whole), so that a
    command refused later (an unknown column) leaves nothing behind."""
    if len(os.fsencode(os.path.basename(path))) > 255:
        fail(f"output file '{path}': its name is longer than 255 bytes")
    try:
        own = os.lstat(path)  # the path itself: a symlink, dangling or not, is what would be replaced
    except (FileNotFoundError, NotADirectoryError):
        own = None  # (under a file: said below, naming the file)
    except OSError as e:
        fail(f"output file {path}: {e.strerror}")
    if os.path.isdir(path):
        fail(f"output file {path} is a folder")
    # The figure is renamed over the path: --force would turn a FIFO or a device
    # into a plain file, and a symlink into a file where the link was. (Said
    # before "use --force": --force would not help.)
    if own is not None and not stat.S_ISREG(own.st_mode):
        fail(f"output file {path} exists and is not a regular file" +
             (" (a symbolic link)" if stat.S_ISLNK(own.st_mode) else "") + " (--force replaces only a regular file)")
    if own is not None:
        for src in inputs:
            try:
                same = os.path.samefile(path, src)
            except OSError:
                same = False  # an input that is not there is reported when it is read
            if same:
                fail(f"output file {path} is {src}, which this command reads; --force would overwrite it: "
                     "choose another name")
        if not force:
            fail(f"output file {path} already exists (use --force to replace it)")
    # The nearest folder that exists (or what stands where one must go) is
    # one this process may write in.
    parent = os.path.dirname(path) or "."
    existing = parent
    while not os.path.lexists(existing):
        up = os.path.dirname(existing) or "."
        if up == existing:
            break
        existing = up
    if not os.path.isdir(existing):
        what = "a symbolic link to nothing" if os.path.islink(existing) else "not a folder"
        fail(f"cannot create output folder {parent}: {existing} is {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"cannot write in folder {existing}")
    # Root passes os.access on /proc or a read-only mount, where the create then
    # fails: a probe file, made and removed at once, says so before the work.
    probe = os.path.join(existing, f".tdmsim-probe.{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # a leftover of a killed process of this pid: the folder takes files
    except OSError as e:
        fail(f"cannot write in folder {existing}: {e.strerror}")
    os.close(fd)
    os.unlink(probe)


def remove_stale_temporaries(folder, prefix):
    """Removes `prefix`PID files in `folder` whose process is gone: the
    temporaries of an earlier plot that was killed while it wrote. (The PID is
    looked up on this host: in a folder shared between hosts, a plot writing
    the same figure on another host at the same time could lose its temporary
    and fail; it never leaves a partial figure.)"""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for n in names:
        pid = n[len(prefix):]
        if not n.startswith(prefix) or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive (or another user's): not ours to remove
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        try:
            os.remove(os.path.join(folder, n))
        except OSError:
            pass


def save_whole(fig, path):
    """Writes the figure to a temporary sibling, on disk, then renames it into
    place: a full disk or an interruption never leaves a partial figure."""
    parent, name = os.path.split(path)
    stem = name
    raw = os.fsencode(name)
    if len(raw) + 1 + 16 > 255:  # a legal long name keeps a legal temporary
        stem = os.fsdecode(raw[:200]) + "~" + hashlib.sha1(raw).hexdigest()[:16]
    tmp = os.path.join(parent or ".", f".{stem}.tmp.{os.getpid()}")
    remove_stale_temporaries(parent or ".", f".{stem}.tmp.")
    fmt = os.path.splitext(name)[1].lstrip(".").lower() or "png"
    made = []  # folders made for the figure, removed again if it is not written
    missing = []
    d = parent or "."
    while not os.path.lexists(d) and os.path.dirname(d) != d:
        missing.append(d)
        d = os.path.dirname(d) or "."
    try:
        for d in reversed(missing):
            os.mkdir(d)
            made.append(d)
        with open(tmp, "wb") as f:
            fig.savefig(f, format=fmt, dpi=130)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        for d in reversed(made):
            try:
                os.rmdir(d)
            except OSError:
                pass
        if isinstance(e, ValueError):  # matplotlib: a format it cannot write
            fail(f"cannot write {path}: {e}")
        print(f"{ERROR} cannot write {path}: {e}", file=sys.stderr)
        sys.exit(1)


def resolve(name, header):
    if name in header:
        return name
    hits = [h for h in header if h.endswith("." + name)]
    if len(hits) == 1:
        return hits[0]
    fail(f"no column '{name}' in the results" + (f" (ambiguous: {', '.join(hits)})" if hits else
                                                 f"; columns: {', '.join(header)}"))


def numeric(values):
    """Values as floats in one unit, and that unit ('' if none); None if not numeric."""
    parsed = []
    for v in values:
        m = NUMBER.match(v)
        if m:
            parsed.append((float(m.group(1)), m.group(2)))
            continue
        m = FACTOR.match(v)
        if not m:
            return None, ""
        parsed.append((float(m.group(1)), FACTOR_UNIT))
    units = [u for _, u in parsed]
    if all(u == units[0] for u in units):
        return [x for x, _ in parsed], units[0]
    if not all(u in UNITS for u in units) or len({UNITS[u][0] for u in units}) != 1:
        return None, ""
    show = max(set(units), key=units.count)
    return [x * UNITS[u][1] / UNITS[show][1] for x, u in parsed], show


def label(col, unit):
    text = LABELS.get(col, col.split(".")[-1].replace("_", " "))
    if unit == FACTOR_UNIT:
        return f"{text} (factor of the base value)"
    return f"{text} ({unit})" if unit else text


def use_log(values, force_log, force_lin):
    if force_log or force_lin:
        return force_log
    pos = [v for v in values if v > 0]
    return len(pos) == len(values) and len(pos) > 1 and max(pos) / min(pos) >= 16


def speedup_rows(rows, header):
    """One row per configuration: software total / tdm total. With repeated draws
    (a tdm_speedup column), the mean of the per-draw ratios and its interval."""
    inputs = header[header.index("point") + 1:header.index("path")]
    key_cols = [c for c in inputs] + ["machine", "model", "tokens", "dtype"]
    groups = defaultdict(dict)
    first = OrderedDict()
    for r in rows:
        k = tuple(r[c] for c in key_cols)
        groups[k][r["path"]] = float(r["total_us"])
        first.setdefault(k, r)
    out = []
    for k, r in first.items():
        g = groups[k]
        if "software" in g and "tdm" in g and g["tdm"] > 0:
            r = dict(r)
            if r.get("tdm_speedup", "") != "":
                r["speedup"] = r["tdm_speedup"]
                r["speedup_ci95_low"] = r["tdm_speedup_ci95_low"]
                r["speedup_ci95_high"] = r["tdm_speedup_ci95_high"]
            else:
                r["speedup"] = str(g["software"] / g["tdm"])
            out.append(r)
    if not out:
        fail("--speedup needs rows of both the software and the tdm path")
    return out


def one_row_per_place(rows, header, x, hue_cols, facet_cols, a):
    """The rows to draw, where each (facet, hue, x) holds one configuration. Rows with
    no x value (a `mode: oat` sweep's base and its other axes' points) are left out,
    with a note. Rows that share a place but differ in an input column (an axis not
    given to --hue or --facet) would be joined into one zig-zag line: bad input (exit 2)
    naming the columns."""
    blank = [r for r in rows if r[x] == ""]
    if blank and len(blank) < len(rows):
        print(f"note: left out {len(blank)} row(s) with no {x} value", file=sys.stderr)
        rows = [r for r in rows if r[x] != ""]
    inputs = []
    if "point" in header and "path" in header:
        inputs = header[header.index("point") + 1:header.index("path")]
    inputs += [c for c in ("path", "machine", "model", "tokens", "dtype") if c in header]
    if a.speedup:
        inputs = [c for c in inputs if c != "path"]
    free = [c for c in inputs if c != x and c not in hue_cols and c not in facet_cols]
    places = defaultdict(list)
    for r in rows:
        places[(r["_facet"], r["_hue"], r[x])].append(r)
    for (fv, hv, xv), same in places.items():
        vary = [c for c in free if len({r[c] for r in same}) > 1]
        if vary:
            where = f"{x} = {xv}" + (f", {hv}" if hv else "") + (f", {fv}" if fv else "")
            fail(f"{len(same)} rows share {where} but differ in {', '.join(vary)}: "
                 f"give {'it' if len(vary) == 1 else 'them'} to --hue or --facet, "
                 "or each would be drawn as one zig-zag line")
    return rows


def use_system_python():
    """Debian's python3-matplotlib belongs to /usr/bin/python3; a python3 earlier on
    PATH (a virtualenv, pyenv) may lack it: run again under /usr/bin/python3. Done
    first, before anything is said or made (run again later, the first run's notes
    were printed twice); find_spec does not import it (bad arguments stay quick)."""
    if importlib.util.find_spec("matplotlib") is None:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system, *sys.argv])


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        print(f"{ERROR} matplotlib is missing: install python3-matplotlib "
              "(scripts/install-deps.sh)", file=sys.stderr)
        sys.exit(1)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def tornado(rows, a):
    """sensitivity.csv (a `mode: oat` sweep): one horizontal bar per parameter from the
    speedup at its low value to the one at its high value, the base speedup as a line; with a
    `jitter:` sweep's noise floor, a grey band of that half-width around the base, and the
    bars of parameters that do not reach beyond it drawn faint."""
    try:
        base = float(rows[0]["base_speedup"])
        bars = [(r["parameter"], r["low_value"], float(r["low_speedup"]), r["high_value"],
                 float(r["high_speedup"]), float(r["min_speedup"]), float(r["max_speedup"])) for r in rows]
        noise = float(rows[0]["noise_floor"]) if rows[0].get("noise_floor") else None
        faint = {r["parameter"] for r in rows if r.get("beyond_noise") == "no"}
    except (KeyError, ValueError) as e:
        fail(f"{a.results} is not a well-formed sensitivity.csv: {e}")
    plt = import_pyplot()
    import matplotlib.colors as mcolors
    bars.reverse()  # rank 1 on top
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.42 * len(bars)))
    labelled = set()  # the legend's entries come from full-colour bars where there are any
    first_full = next((i for i, b in enumerate(bars) if b[0] not in faint), 0)
    for i, (name, lv, ls, hv, hs, mn, mx) in enumerate(bars):
        # The farther value first, so that both show when they lie on the same side of the base.
        both = [(ls, "tab:blue", "low value"), (hs, "tab:orange", "high value")]
        for s_, color, name_ in sorted(both, key=lambda b: -abs(b[0] - base)):
            label = name_ if i == first_full and name_ not in labelled else None
            labelled.add(label)
            # Inside the noise floor: the colour mixed with white (opaque, so that two bars
            # over each other keep their own colours).
            shade = tuple(0.35 * c + 0.65 for c in mcolors.to_rgb(color)) if name in faint else color
            ax.barh(i, s_ - base, left=base, color=shade, height=0.6, label=label)
        if mn < min(ls, hs) or mx > max(ls, hs):  # values between low and high reach further
            ax.plot([mn, mx], [i, i], color="black", linewidth=0.8)
        # The values' names beyond the bars' ends; two on one side of the base share one
        # label at the farther end, farther value first (apart, short bars' names overlap).
        for side in (True, False):
            pairs = ((lv, ls),) if (lv, ls) == (hv, hs) else ((lv, ls), (hv, hs))  # an axis of one value
            on = sorted(((v, s) for v, s in pairs if (s >= base) == side), key=lambda vs: -abs(vs[1] - base))
            if on:
                ax.annotate(", ".join(v for v, _ in on), (on[0][1], i), xytext=(3 if side else -3, 0),
                            textcoords="offset points", ha="left" if side else "right", va="center", fontsize=7)
    ax.axvline(base, color="grey", linewidth=0.8, linestyle="--")
    if noise is not None:
        ax.axvspan(base - noise, base + noise, color="grey", alpha=0.15, linewidth=0,
                   label=f"noise floor (jitter), ±{noise:.3f}", zorder=0)
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars], fontsize=8)
    ax.set_xlabel(f"TDM speedup over software (x); base {base:.3f}")
    ax.margins(x=0.25)
    ax.grid(True, axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda k: labels[k])
    # Below everything, in a strip of its own: inside the axes it covered the labels of the
    # bottom rows.
    height = fig.get_size_inches()[1]
    fig.legend([handles[k] for k in order], [labels[k] for k in order], fontsize=8, loc="lower center",
               ncol=len(order), frameon=False)
    if a.title:
        ax.set_title(a.title, fontsize=10)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    save_whole(fig, a.output)
    print(f"wrote {a.output}")


def waterfall(summary_path, a):
    """A run's tdm_vs_software (tdmsim run --path both): the software total, one
    floating bar per cause from the running total by its delta (TDM - software),
    then the TDM total; the bars end exactly where the TDM total is."""
    try:
        with open(summary_path) as f:
            summary = json.load(f)
    except OSError as e:
        fail(str(e))
    except ValueError as e:
        fail(f"{summary_path} is not JSON: {e}")
    tvs = summary.get("tdm_vs_software") if isinstance(summary, dict) else None
    if not isinstance(tvs, dict):
        fail(f"{summary_path} has no tdm_vs_software: run both paths (tdmsim run --path both "
             "on a machine with a tdm: section)")
    if "serving" in summary and "software_us" not in tvs:
        # A request stream's run compares latencies, not one layer's causes.
        fail(f"{summary_path} is a request stream's run (serving:): its tdm_vs_software holds latency ratios, "
             "not a layer's causes, so there is no waterfall to draw; plot a single-layer run "
             "(docs/serving.md lists the stream's figures)")
    try:
        sw, tdm = float(tvs["software_us"]), float(tvs["tdm_us"])
        causes = [(c["label"], float(c["delta_us"])) for c in tvs["causes"]]
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{summary_path}: malformed tdm_vs_software: {e}")
    plt = import_pyplot()
    names = ["software"] + [n for n, _ in causes] + ["TDM"]
    fig, ax = plt.subplots(figsize=(8.0, 1.2 + 0.42 * len(names)))
    y = list(range(len(names)))[::-1]  # software on top
    ax.barh(y[0], sw, color="tab:grey", height=0.6)
    ax.annotate(f"{sw:.2f}", (sw, y[0]), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    run = sw
    for i, (name, d) in enumerate(causes, start=1):
        ax.barh(y[i], d, left=run, height=0.6,
                color="tab:green" if d < 0 else "tab:red",
                label=("TDM saves" if d < 0 else "TDM costs") if d != 0 else None)
        end = max(run, run + d)
        ax.annotate(f"{d:+.2f}", (end, y[i]), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
        ax.plot([run + d, run + d], [y[i] - 0.3, y[i] - 0.7], color="black", linewidth=0.6)
        run += d
    ax.barh(y[-1], tdm, color="tab:blue", height=0.6)
    ax.annotate(f"{tdm:.2f}", (tdm, y[-1]), xytext=(3, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=8)
    # The axis starts near the running totals (the totals' bars are cut there), so
    # that causes of a few percent of the total are visible.
    run = sw
    levels = [sw, tdm]
    for _, d in causes:
        run += d
        levels.append(run)
    lo, hi = min(levels), max(levels)
    left = max(0.0, lo - 1.5 * max(hi - lo, 0.02 * hi))
    ax.set_xlim(left, hi + 0.35 * max(hi - left, 1e-9))
    ax.set_xlabel("layer time (us)" + (f", axis from {left:.4g}" if left > 0 else "") +
                  "; causes: TDM - software")
    ax.grid(True, axis="x", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    seen = OrderedDict()
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    if seen:
        ax.legend(list(seen.values()), list(seen.keys()), fontsize=8, loc="upper center",
                  bbox_to_anchor=(0.5, -0.14), ncol=len(seen), frameon=False)
    speed = f", TDM speedup {sw / tdm:.2f}x" if tdm > 0 else ""
    # Right-aligned over the bars: the long cause names push the axes right, and a centred
    # title of a long scenario name ran off the figure.
    ax.set_title(a.title or f"{summary.get('scenario', '')} on {summary.get('machine', '')}{speed}", fontsize=10,
                 loc="right")
    fig.tight_layout()
    save_whole(fig, a.output)
    print(f"wrote {a.output}")


class Parser(argparse.ArgumentParser):
    """argparse's own errors ("the following arguments are required") read like tdmsim's."""

    def error(self, message):
        self.print_usage(sys.stderr)
        # argparse reports a missing argument before a misspelt option; the
        # misspelling is the real fault (as tdmsim's own commands say it).
        if message.startswith("the following arguments are required"):
            known = self._option_string_actions
            unknown = []
            takes_value = False  # the previous argument was an option that takes one
            for arg in sys.argv[1:]:
                if arg == "--":
                    break
                if takes_value:
                    takes_value = False
                    continue
                name = arg.split("=", 1)[0]
                if not name.startswith("-") or len(name) < 2:
                    continue
                # "-ofig.png": a short option with its value attached.
                short = name[:2] if not name.startswith("--") else None
                match = [k for k in known if k.startswith(name)] or ([short] if short in known else [])
                if not match:
                    unknown.append(arg)
                elif "=" not in arg and (short is None or len(name) == 2):
                    takes_value = known[match[0]].nargs != 0
            if unknown:
                message = "unrecognized arguments: " + " ".join(unknown)
        fail(message)


def main():
    # `tdmsim plot` runs this script: its usage line names the command users type.
    ap = Parser(prog=os.environ.get("TDMSIM_PLOT_PROG", "plot_sweep.py"), description=__doc__.split("\n")[0])
    ap.add_argument("results", help="results.csv of tdmsim sweep, the sensitivity.csv of a mode: oat sweep, "
                    "or a tdmsim run --path both output folder (or its summary.json): a waterfall of the causes")
    ap.add_argument("--x", help="x-axis column (results.csv)")
    # No default here: --y given with --speedup is refused (it was ignored), so an
    # explicit one must be told from the default (total_us, filled in below).
    ap.add_argument("--y", help="y-axis column (results.csv; default total_us)")
    ap.add_argument("--hue", help="one line per value of this column")
    ap.add_argument("--facet", help="one panel per value of this column")
    ap.add_argument("--speedup", action="store_true", help="y = software time / TDM time")
    ap.add_argument("--output", "-o", required=True, help="figure file (.png, .svg, .pdf)")
    ap.add_argument("--force", action="store_true", help="replace an existing --output file")
    ap.add_argument("--title", help="figure title (default: what is plotted)")
    # --logx --linx together contradict each other (the log one won, unsaid): refused
    # by argparse, in tdmsim's form (Parser.error).
    xscale = ap.add_mutually_exclusive_group()
    xscale.add_argument("--logx", action="store_true",
                        help="log-scale x axis (default: log where the values span a factor of 16 or more)")
    xscale.add_argument("--linx", action="store_true", help="linear x axis")
    yscale = ap.add_mutually_exclusive_group()
    yscale.add_argument("--logy", action="store_true", help="log-scale y axis (default as for x)")
    yscale.add_argument("--liny", action="store_true", help="linear y axis")
    a = ap.parse_args()
    use_system_python()
    if a.speedup and a.y is not None:
        fail(f"--y {a.y} and --speedup together: --speedup plots the software path's time over the TDM path's; "
             "give one of them")
    # The table's options, for the inputs that draw no table (a waterfall, a
    # tornado), which would ignore them unsaid.
    table_options = [name for name, given in (("--x", a.x), ("--y", a.y), ("--hue", a.hue), ("--facet", a.facet),
                                               ("--speedup", a.speedup), ("--logx", a.logx), ("--linx", a.linx),
                                               ("--logy", a.logy), ("--liny", a.liny)) if given]

    def no_table_options(drawing):
        if table_options:
            fail(f"{' '.join(table_options)}: {'applies' if len(table_options) == 1 else 'apply'} to a sweep's "
                 f"results.csv; {a.results} is drawn as {drawing}, which takes only --output, --force and --title")

    a.y = a.y or "total_us"
    # What this command reads may not be its output (--force would overwrite it).
    inputs = [a.results] + ([os.path.join(a.results, "summary.json")] if os.path.isdir(a.results) else [])
    check_output(a.output, a.force, inputs)
    if os.path.isdir(a.results):
        summary = os.path.join(a.results, "summary.json")
        if not os.path.lexists(summary):
            # A sweep's folder (results.csv, sensitivity.csv) is no run's: name the
            # files to give, not the summary.json it was never meant to have.
            tables = [f"{os.path.join(a.results, n)} ({what})" for n, what in
                      (("results.csv", "with --x COLUMN"), ("sensitivity.csv", "a tornado"))
                      if os.path.isfile(os.path.join(a.results, n))]
            if tables:
                fail(f"{a.results} is a sweep's output folder, not a run's (it has no summary.json): plot "
                     + " or ".join(tables))
            fail(f"{a.results} has no summary.json: give a tdmsim run --path both output folder, "
                 "a sweep's results.csv or a mode: oat sweep's sensitivity.csv")
        no_table_options("a waterfall of the causes")
        return waterfall(summary, a)
    if os.path.exists(a.results) and not os.path.isfile(a.results):
        # A FIFO would block the read, a device never end it.
        fail(f"{a.results} is not a regular file")
    if a.results.endswith(".json"):
        no_table_options("a waterfall of the causes")
        return waterfall(a.results, a)

    try:
        with open(a.results, "rb") as f:
            head = f.read(64).lstrip()
    except OSError as e:
        fail(f"cannot read {a.results}: {e.strerror}")
    if head[:1] in (b"{", b"["):
        # results.jsonl (the sweep's journal) read as CSV split its first object at
        # each comma: a header of thousands of "columns", some of them twice.
        beside = os.path.join(os.path.dirname(a.results), "results.csv")
        kind = "JSON lines" if a.results.endswith(".jsonl") else "JSON"
        fail(f"{a.results} is not a CSV table (it holds {kind}): give "
             + (beside if os.path.isfile(beside) and beside != a.results else "a sweep's results.csv"))
    try:
        header, rows = outputs.read_table(a.results)
    except (OSError, outputs.TableError) as e:
        fail(str(e))
    if not rows:
        fail(f"{a.results} has no rows")
    if outputs.is_sensitivity(header):
        no_table_options("a tornado")
        return tornado(rows, a)
    if not a.x:
        fail("--x is required (a results.csv column)")
    x = resolve(a.x, header)
    # --hue and --facet may name several columns (a,b): one line / panel per combination.
    hue_cols = [resolve(h, header) for h in a.hue.split(",")] if a.hue else []
    facet_cols = [resolve(f, header) for f in a.facet.split(",")] if a.facet else []
    for r in rows:
        r["_hue"] = ", ".join(r[c] for c in hue_cols)
        r["_facet"] = ", ".join(f"{c.split('.')[-1]} = {r[c]}" for c in facet_cols)
    hue = "_hue" if hue_cols else None
    facet = "_facet" if facet_cols else None
    hue_title = ", ".join(c.split(".")[-1] for c in hue_cols)
    if a.speedup:
        rows = speedup_rows(rows, header)
        y = "speedup"
    else:
        y = resolve(a.y, header)
    rows = [r for r in rows if r[y] != ""]
    if not rows:
        fail(f"column {y} is empty")
    rows = one_row_per_place(rows, header, x, hue_cols, facet_cols, a)

    plt = import_pyplot()
    from matplotlib.ticker import FuncFormatter

    xs, xunit = numeric([r[x] for r in rows])
    categorical = xs is None
    # Factors of the base (x0.8) beside absolute values (4TB/s) have no common
    # scale here (the base's value is not in results.csv): as categories they
    # would be drawn in file order and joined as if ordered.
    factors = [v for v in OrderedDict.fromkeys(r[x] for r in rows) if FACTOR.match(v)]
    others = [v for v in OrderedDict.fromkeys(r[x] for r in rows) if not FACTOR.match(v)]
    if categorical and factors and others and numeric(others)[0] is not None:
        fail(f"column {x} mixes factors of the base value ({', '.join(factors[:3])}) with absolute values "
             f"({', '.join(others[:3])}), which share no scale: write the axis in one form, or plot the two "
             "kinds of rows apart")
    if categorical:
        if a.logx:
            fail(f"--logx: column {x} is not numeric")
        cats = list(OrderedDict.fromkeys(r[x] for r in rows))
        xs = [float(cats.index(r[x])) for r in rows]
    ys, yunit = numeric([r[y] for r in rows])
    if ys is None:
        fail(f"column {y} is not numeric")
    # A logarithmic axis has no place for 0 or less: matplotlib left those points
    # out of the figure unsaid.
    for flag, col, vals, raw in (("--logx", x, xs, [r[x] for r in rows]), ("--logy", y, ys, [r[y] for r in rows])):
        bad = list(OrderedDict.fromkeys(t for v, t in zip(vals, raw) if v <= 0))
        if getattr(a, flag[2:]) and bad:
            fail(f"{flag}: column {col} has values <= 0 ({', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}): "
                 "a logarithmic axis cannot show them")
    for r, xv, yv in zip(rows, xs, ys):
        r["_x"], r["_y"] = xv, yv
    # Repeated draws: the interval of the mean, in y's unit (the CI columns are
    # plain numbers in the metric's own unit, as y is).
    band = all(r.get(f"{y}_ci95_low", "") != "" and r.get(f"{y}_ci95_high", "") != "" for r in rows)
    if band:
        for r in rows:
            r["_lo"], r["_hi"] = float(r[f"{y}_ci95_low"]), float(r[f"{y}_ci95_high"])

    facets = list(OrderedDict.fromkeys(r[facet] for r in rows)) if facet else [None]
    cols = min(3, len(facets))
    nrows = math.ceil(len(facets) / cols)
    size = (7.0, 4.6) if len(facets) == 1 else (5.2 * cols, 3.8 * nrows)
    fig, axes = plt.subplots(nrows, cols, figsize=size, squeeze=False)
    logx = not categorical and use_log(xs, a.logx, a.linx)
    logy = use_log(ys, a.logy, a.liny)
    for i, fv in enumerate(facets):
        ax = axes[i // cols][i % cols]
        sub = [r for r in rows if facet is None or r[facet] == fv]
        hues = list(OrderedDict.fromkeys(r[hue] for r in sub)) if hue else [None]
        for hv in hues:
            pts = sorted((r["_x"], r["_y"], r.get("_lo"), r.get("_hi")) for r in sub if hue is None or r[hue] == hv)
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3.5, linewidth=1.4,
                            label=hv if hue else None)
            if band:
                ax.fill_between([p[0] for p in pts], [p[2] for p in pts], [p[3] for p in pts],
                                color=line.get_color(), alpha=0.2, linewidth=0)
        if logx:
            pow2 = all(v > 0 and float(v).is_integer() and (int(v) & (int(v) - 1)) == 0 for v in xs)
            ax.set_xscale("log", base=2 if pow2 else 10)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if xunit == FACTOR_UNIT:  # ticks read as the values were given (x0.8)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"x{v:g}"))
        if logy:
            ax.set_yscale("log")
        if categorical:
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, rotation=30, ha="right")
        if a.speedup:
            ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel(label(x, xunit))
        ax.set_ylabel(label(y, yunit))
        if facet:
            ax.set_title(fv, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        if hue and len(hues) > 1:
            ax.legend(title=hue_title, fontsize=8, title_fontsize=8)
    for j in range(len(facets), nrows * cols):
        axes[j // cols][j % cols].axis("off")
    if a.title:
        import textwrap
        fig.suptitle("\n".join(textwrap.wrap(a.title, width=int(60 * cols))), fontsize=10)
    fig.tight_layout()
    save_whole(fig, a.output)
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
