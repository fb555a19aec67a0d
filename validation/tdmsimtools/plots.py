"""The accuracy reports' figures (matplotlib, imported only when a figure is drawn):
shared axes and colours, a deterministic PNG writer, and the simulated-against-published
figure of AITER's tuned tables that validation/report.py (MI300X, MI355X) and
validation/calibration/aiter_tuned.py (any table, --plots) draw."""
import os
import sys
import tempfile

# The MI-series accuracy aims (issue 20): total-time MAPE <= 15% and no row beyond ±50%,
# the two bands the simulated-against-published figures shade.
AIM_MAPE, AIM_WORST = 0.15, 0.50


def have_matplotlib(script):
    """True where matplotlib imports. Else, Debian's python3-matplotlib belonging to
    /usr/bin/python3 while another python3 (pyenv, a virtualenv) runs this one, the script
    (its path) is run again there with the same arguments (no return); False where there is
    none to run."""
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system, os.path.abspath(script), *sys.argv[1:]])
        return False


def group_colours(groups):
    """A colour per group name, in sorted order: matplotlib's tab10, tab20 for more than
    ten groups (distinct up to twenty)."""
    import matplotlib
    names = sorted(groups)
    cmap = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {g: cmap(i % cmap.N) for i, g in enumerate(names)}


def token_axis(ax):
    """A token-count x axis: base-2 logarithmic, plain numbers."""
    from matplotlib.ticker import FuncFormatter
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def loglog_axes(ax, lo, hi, xlabel, ylabel):
    """A predicted-against-measured panel's axes: both logarithmic over [lo, hi]."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def savefig(fig, path):
    """Writes the figure to path as a PNG through a temporary file in the same folder
    (no half-written figure), without the software stamp (same input, same bytes)."""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".png",
                               dir=os.path.dirname(path) or ".")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, metadata={"Software": None})
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# The range of times a figure's log axes take (us); a row outside it (a mistyped published
# time of 1e308 us, say) is left out of the figure and counted in its title.
TIME_RANGE_US = (1e-3, 1e9)
# The error axis (%): an error beyond it is drawn at the edge as an open marker.
ERROR_RANGE_PCT = (-100.0, 150.0)


def simulated_vs_published(path, title, rows, group, published, roofline=None):
    """One figure of AITER tuned-table rows at path (returned): left, simulated against
    published total time (log-log); right, the error by token count; the ±15% and ±50%
    aims shaded. rows: dicts with "simt" (simulated us), "tokens" and, where the rows are
    split, "role" ("calibration" or "held out": circles and triangles; other rows
    circles). group(r): the colour's name (format, shard); published(r): the published
    total us; roofline(r): the plain roofline's us, drawn as grey crosses where given.
    Rows whose times fall outside TIME_RANGE_US are left out (the title counts them);
    errors beyond ERROR_RANGE_PCT are drawn at the edge, hollow."""
    import math
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    t_lo, t_hi = TIME_RANGE_US
    e_lo, e_hi = ERROR_RANGE_PCT

    def inside(v):
        return math.isfinite(v) and t_lo <= v <= t_hi

    shown = [r for r in rows if inside(published(r)) and inside(r["simt"]) and (not roofline or inside(roofline(r)))]
    left_out = len(rows) - len(shown)
    markers = {"calibration": "o", "held out": "^"}
    roles = {r.get("role") for r in shown} & set(markers)
    colours = group_colours({group(r) for r in shown})
    fig, (sc, tk) = plt.subplots(1, 2, figsize=(12.5, 5.6))
    vals = [published(r) for r in shown] + [r["simt"] for r in shown] + \
        ([roofline(r) for r in shown] if roofline else [])
    lo, hi = (min(vals) / 1.5, max(vals) * 1.5) if vals else (1.0, 10.0)
    xs = [lo, hi]
    sc.fill_between(xs, [x * (1 - AIM_WORST) for x in xs], [x * (1 + AIM_WORST) for x in xs], color="0.92")
    sc.fill_between(xs, [x * (1 - AIM_MAPE) for x in xs], [x * (1 + AIM_MAPE) for x in xs], color="0.82")
    sc.plot(xs, xs, color="0.3", lw=1)
    tk.axhspan(-100 * AIM_WORST, 100 * AIM_WORST, color="0.92", zorder=0)
    tk.axhspan(-100 * AIM_MAPE, 100 * AIM_MAPE, color="0.82", zorder=0)
    tk.axhline(0, color="0.3", lw=1)

    def error(sim, r):
        """(drawn error %, whether it was clipped to the axis)."""
        e = 100 * (sim / published(r) - 1)
        return min(e_hi, max(e_lo, e)), not e_lo <= e <= e_hi

    clipped = 0
    if roofline:
        sc.scatter([published(r) for r in shown], [roofline(r) for r in shown], s=12, marker="x", color="0.55",
                   linewidths=0.7, zorder=2)
        errs = [error(roofline(r), r) for r in shown]
        clipped += sum(c for _, c in errs)
        tk.scatter([r["tokens"] for r in shown], [e for e, _ in errs], s=12, marker="x", color="0.55",
                   linewidths=0.7, zorder=2)
    for r in shown:
        colour, marker = colours[group(r)], markers.get(r.get("role"), "o")
        sc.scatter(published(r), r["simt"], s=26, color=colour, marker=marker, edgecolors="black", linewidths=0.4,
                   zorder=3)
        e, out = error(r["simt"], r)
        clipped += out
        tk.scatter(r["tokens"], e, s=26, marker=marker, zorder=3, linewidths=0.9 if out else 0.4,
                   facecolors="none" if out else colour, edgecolors=colour if out else "black")
    loglog_axes(sc, lo, hi, "published total time (us; AITER's us1 + us2)", "simulated total time (us)")
    token_axis(tk)
    tk.set_ylim(e_lo - 5, e_hi + 5)  # room for the markers drawn at the clip
    tk.set_xlabel("tokens (log scale)")
    tk.set_ylabel("error = simulated / published - 1 (%)" +
                  (f"\n({clipped} beyond the axis: drawn hollow at its edge)" if clipped else ""))
    handles = [Line2D([], [], ls="", marker="s", color=colours[g], markeredgecolor="black", markeredgewidth=0.4,
                      label=g) for g in sorted(colours)]
    handles += [Line2D([], [], ls="", marker=markers[label], color="0.6", markeredgecolor="black",
                       markeredgewidth=0.4, label=label) for label in markers if label in roles]
    if roofline:
        handles.append(Line2D([], [], ls="", marker="x", color="0.55", label="plain roofline"))
    for ax in (sc, tk):
        ax.grid(True, which="both", alpha=0.3)
    # Lower right: simulated far below published, where the fewest rows fall (the upper
    # left holds the small rows simulated too slow).
    sc.legend(handles=handles, fontsize=7, loc="lower right")
    note = (f"; {left_out} row{'s' if left_out != 1 else ''} with a time outside {t_lo:g}-{t_hi:g} us "
            "left out" if left_out else "")
    fig.suptitle(f"{title}: simulated vs published (shaded: ±15%, ±50%){note}", fontsize=11)
    fig.tight_layout()
    savefig(fig, path)
    plt.close(fig)
    return path
