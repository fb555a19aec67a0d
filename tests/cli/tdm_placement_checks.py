#!/usr/bin/env python3
"""Both paths spread a small grid over every die (docs/simulator.md, dispatcher row).

On mi500x-tdm (8 XCDs x 64 CUs, 4+ slots a CU), a 1-token layer's grids are far smaller
than the CUs' slots. The host launches go round robin over the XCDs (launch.workgroup_order
die_round_robin), and the TDM unit's first wave of jobs is spread the same way, each die its
share: every die runs work on both paths, the dies' workgroup counts differ by at most one
per kernel, and no CU runs more workgroups than kernels (one slot a CU before a second).
Before the unit spread its jobs, all of them filled the slots of die 0's first CUs.

Usage: tdm_placement_checks.py TDMSIM WORKDIR SCENARIO"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys


def main():
    tdmsim, work, scenario = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.dirname(work) or ".", exist_ok=True)
    subprocess.run([tdmsim, "run", scenario, "--path", "both", "--quiet", "--output", work], check=True)
    with open(os.path.join(work, "stats.json")) as f:
        stats = json.load(f)
    cu_stat = re.compile(r"gpu\.xcd\[(\d+)\]\.cu\[(\d+)\]\.workgroups$")
    for path in ("software", "tdm"):
        s = stats[path]
        kernels = s["gpu.dispatcher.kernels"]["value"]
        per_die, per_cu = collections.Counter(), collections.Counter()
        for key, v in s.items():
            m = cu_stat.match(key)
            if m:
                per_die[int(m.group(1))] += v["value"]
                per_cu[(int(m.group(1)), int(m.group(2)))] += v["value"]
        dies = len({d for d, _ in per_cu})
        assert dies == 8, f"{path}: expected 8 dies in the stats, got {dies}"
        counts = [per_die[d] for d in range(dies)]
        print(f"{path}: {kernels} kernel(s), workgroups per die {counts}, at most {max(per_cu.values())} on a CU")
        assert min(counts) > 0, f"{path}: a die ran nothing: {counts}"
        assert max(counts) - min(counts) <= kernels, f"{path}: dies uneven beyond one a kernel: {counts}"
        assert max(per_cu.values()) <= kernels, f"{path}: a CU ran {max(per_cu.values())} workgroups of {kernels} kernels"


if __name__ == "__main__":
    main()
