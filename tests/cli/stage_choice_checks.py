#!/usr/bin/env python3
"""validation/stage_choice.py reads AITER's stage rule and the forced stage counts' times
as tdmsim gives them.

On Mixtral-8x7B TP8 fp8 per-token on mi300x (AITER: 1-stage when token > 16), at 16 and
512 tokens: the CSV's rule column is 2 and 1; each stage count runs AITER's block_m for
that count (1-stage: BLOCK_SIZE_M 32; 2-stage: get_block_size_M, worked by hand below),
whichever count the rule picks; each time equals the kernel times but the sort's, without
launch overhead, of a `tdmsim run` of that scenario written here independently; the ratio
is the picked stage count's time over the other's; the 1- and 2-stage times differ (the
forcing took effect).

    stage_choice_checks.py TDMSIM WORKDIR
"""
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "validation", "stage_choice.py")


def direct_us(tdmsim, work, tokens, stages):
    sc = os.path.join(work, f"direct-{tokens}-{stages}.yaml")
    with open(sc, "w") as f:
        f.write(f"name: direct\nmachine: mi300x\nmodel: mixtral-8x7b\ntokens: {tokens}\n"
                "dtype: fp8_e4m3_fnuz\nweight_dtype: fp8_e4m3_fnuz\nquant: per_token\nseed: 1\npath: software\n"
                "parallel: {tp: 8}\nrouting: {source: uniform, router_stage: given}\n"
                f"kernel: {{source: aiter, heuristic: aiter, stages: {stages}}}\n")
    out = os.path.join(work, f"direct-{tokens}-{stages}")
    subprocess.run([tdmsim, "run", sc, "--quiet", "--force", "--output", out], check=True)
    with open(os.path.join(out, "summary.json")) as f:
        stages_ = json.load(f)["paths"][0]["stages"]
    names = {s["stage"] for s in stages_}
    assert "sort" in names, names  # the sort is there and must be left out
    return sum(s["time_us"] - s["launch_overhead_us"] for s in stages_ if s["stage"] != "sort")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tdmsim, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "stage-choice.csv")
    subprocess.run([sys.executable, SCRIPT, tdmsim, "--machines", "mi300x", "--models", "mixtral-8x7b", "--tp", "8",
                    "--formats", "fp8-per-token", "--tokens", "16,512", "--csv", out], check=True,
                   stdout=subprocess.DEVNULL)
    rows = {int(r["tokens"]): r for r in csv.DictReader(open(out))}
    failed = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failed.append(what)

    check(sorted(rows) == [16, 512], f"one row per token count: {sorted(rows)}")
    check(rows[16]["rule_stages"] == "2", f"16 tokens: AITER's rule (token > 16) keeps 2 stages: {rows[16]['rule_stages']}")
    check(rows[512]["rule_stages"] == "1", f"512 tokens: AITER's rule runs 1 stage: {rows[512]['rule_stages']}")
    # get_block_size_M for Mixtral TP8 (I 1792: tgN 14 N tiles of 128; 8 experts, top-2) on
    # 304 CUs, groups = tgN * (rows + 8 M - 2 + M - 1) // M: 512 tokens (1024 rows), M 32:
    # 572 groups, 2 rounds; M 64: 349, 2 rounds; M 128: 237, 1 round: 128. 16 tokens (32
    # rows): M 32 138, M 64 132, M 128 129 groups, one round each, 166, 172, 175 CUs idle:
    # the fewest idle, 32.
    for tokens, m2 in ((512, "128"), (16, "32")):
        check(rows[tokens]["block_m_1stage"] == "32", f"{tokens} tokens, 1-stage: BLOCK_SIZE_M 32: "
                                                     f"{rows[tokens]['block_m_1stage']}")
        check(rows[tokens]["block_m_2stage"] == m2, f"{tokens} tokens, 2-stage: get_block_size_M {m2}: "
                                                    f"{rows[tokens]['block_m_2stage']}")
    for tokens, r in rows.items():
        us1, us2 = float(r["us_1stage"]), float(r["us_2stage"])
        for stages, us in ((1, us1), (2, us2)):
            want = direct_us(tdmsim, work, tokens, stages)
            check(abs(us - want) <= 0.051, f"{tokens} tokens, {stages}-stage: {us} us = the kernels' time of a "
                                           f"direct run, {want:.2f} us")
        check(us1 != us2, f"{tokens} tokens: 1- and 2-stage times differ ({us1}, {us2})")
        picked, other = (us1, us2) if r["rule_stages"] == "1" else (us2, us1)
        check(abs(float(r["ratio"]) - picked / other) < 0.002,
              f"{tokens} tokens: ratio {r['ratio']} = picked / other {picked / other:.3f}")
    if failed:
        print(f"FAIL: {len(failed)} check(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
