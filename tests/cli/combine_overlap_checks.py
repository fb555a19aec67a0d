#!/usr/bin/env python3
"""validation/calibration/combine_overlap.py: the two readings recovered from made-up rows
whose stage-2 times follow one of them exactly; bad input refused with exit 2; and, where
../shared/calibration is present, the committed table (validation/data/amd/combine-overlap.md)
reproduced.

    combine_overlap_checks.py MODE    (MODE: synthetic | bad | data)

Exit 0 pass, 1 fail, 77 skip (data mode without the shared files).
"""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "validation", "calibration", "combine_overlap.py")
DATA = os.path.join(ROOT, "validation", "data", "amd", "combine-overlap.md")
SHARED = [os.path.join(ROOT, "..", "shared", "calibration", n)
          for n in ("mi300x_fused_moe_qwen3_235b_bf16.csv", "mi355x_fused_moe_aiter_tuned.csv")]
HEADER = "cu_num,token,model_dim,inter_dim,expert,topk,q_dtype_a,q_dtype_w,q_type,us2,run_1stage\n"
PEAK_FP4 = 10066.3e12  # MI355X fp4, as the script's table


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def table(text):
    """The result rows of the script's markdown (without the date and command lines)."""
    return [l for l in text.splitlines() if l.startswith("| MI")]


def synthetic():
    # MI355X fp4 rows whose us2 is exactly combine MB / 2.5 TB/s + matrix us / 0.4: the
    # added reading must find R 2.50, e 0.40 at 0.0%, the larger one must not fit as well.
    rows = []
    for tokens in (4096, 8192, 16384, 32768):
        for h, i, topk in ((7168, 256, 9), (7168, 2048, 8), (3072, 512, 4)):
            mb = tokens * topk * h * 2 / 1e6
            matrix_us = tokens * topk * 2.0 * i * h / PEAK_FP4 * 1e6
            us2 = mb / 2.5 + matrix_us / 0.4
            rows.append(f"256,{tokens},{h},{i},256,{topk},torch.float4_e2m1fn_x2,torch.float4_e2m1fn_x2,"
                        f"QuantType.per_1x32,{us2},0\n")
    # Rows the script must leave out: a 1-stage row, a decode row, an fp8 block-scale row.
    rows.append("256,8192,7168,256,256,9,torch.float4_e2m1fn_x2,torch.float4_e2m1fn_x2,QuantType.per_1x32,1,1\n")
    rows.append("256,64,7168,256,256,9,torch.float4_e2m1fn_x2,torch.float4_e2m1fn_x2,QuantType.per_1x32,1,0\n")
    rows.append("256,8192,7168,256,256,9,torch.float8_e4m3fn,torch.float8_e4m3fn,QuantType.per_1x128,1,0\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "made.csv")
        with open(path, "w") as f:
            f.write(HEADER + "".join(rows))
        out = os.path.join(tmp, "out.md")
        p = run(path, "--markdown", out)
        if p.returncode != 0:
            print(f"FAIL: exit {p.returncode}: {p.stderr}")
            return 1
        got = table(open(out).read())
    added = [l for l in got if "| added |" in l]
    larger = [l for l in got if "| larger |" in l]
    if len(added) != 1 or len(larger) != 1:
        print("FAIL: expected one MI355X row per reading:\n" + "\n".join(got))
        return 1
    cells = [c.strip() for c in added[0].strip("|").split("|")]
    if cells[1] != "12" or cells[3] != "0.0%" or cells[4] != "2.50" or cells[5] != "0.40":
        print(f"FAIL: added reading should be 12 rows, 0.0%, R 2.50, e 0.40: {added[0]}")
        return 1
    worse = float([c.strip() for c in larger[0].strip("|").split("|")][3].rstrip("%"))
    if worse < 1.0:
        print(f"FAIL: the larger reading fits made-up added times too well ({worse}%): {larger[0]}")
        return 1
    print("ok: " + added[0] + "\n    " + larger[0])
    return 0


def bad():
    """Each bad file exits 2 with the given words (file:line among them) in the message."""
    cases = [  # (what, file name, contents or None for an absent file, words the message must hold)
        ("missing columns", "short.csv", "cu_num,token\n256,64\n", ("missing column(s)", "short.csv:1")),
        ("absent file", "absent.csv", None, ("cannot read",)),
        # The activation dtype is read for the slower operand's peak: its column is required.
        ("no q_dtype_a column", "no_a.csv", HEADER.replace("q_dtype_a,", "") +
         "256,4096,7168,256,256,9,torch.float4_e2m1fn_x2,QuantType.per_1x32,1,0\n",
         ("missing column(s) q_dtype_a", "no_a.csv:1")),
        ("a word for a number", "word.csv",
         HEADER + "256,many,7168,256,256,9,a,torch.float4_e2m1fn_x2,QuantType.per_1x32,1,0\n", ("word.csv:2",)),
        # A short row (its missing cells None), after a blank line: the file's own line.
        ("a short row", "short_row.csv", HEADER + "\n256,4096,7168\n", ("short_row.csv:3",)),
        ("a NaN time", "nan.csv", HEADER + "256,4096,7168,256,256,9,torch.float4_e2m1fn_x2,torch.float4_e2m1fn_x2,"
         "QuantType.per_1x32,nan,0\n", ("nan.csv:2",)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for what, name, text, words in cases:
            path = os.path.join(tmp, name)
            if text is not None:
                with open(path, "w") as f:
                    f.write(text)
            p = run(path)
            if p.returncode != 2 or any(w not in p.stderr for w in words):
                print(f"FAIL: {what}: exit {p.returncode}, {p.stderr!r}")
                return 1
    print("ok: bad input exits 2 with file and line")
    return 0


def data():
    if not all(os.path.isfile(p) for p in SHARED):
        print("skip: ../shared/calibration not present")
        return 77
    p = run()
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}: {p.stderr}")
        return 1
    want, got = table(open(DATA).read()), table(p.stdout)
    if not want or want != got:
        print("FAIL: validation/data/amd/combine-overlap.md differs from a fresh run:\n"
              + "\n".join(want) + "\n--- now ---\n" + "\n".join(got))
        return 1
    print("ok: the committed table reproduces")
    return 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    sys.exit({"synthetic": synthetic, "bad": bad, "data": data}.get(mode, lambda: (print("usage: MODE"), 2)[1])())
