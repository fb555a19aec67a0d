#!/usr/bin/env python3
"""The main-loop finder of scripts/amd-kernel-summary.py on a synthetic disassembly shaped
like our GEMM kernels' code objects (docs/moe-timing.md "CDNA main-loop issue"): hipcc
rotates the K loop (the kernel's entry code jumps into the loop past its test, and the
loop's LDS store of the previous K tile sits at a lower address than that entry point),
and lays out the unrolled byte copy of copy16_async's K tail out of order (a backward
branch that is no back edge). The loop charged must be the natural loop (headers that
dominate their back edges' sources), without the kernel's entry code, and less the
K-tail path, which is reported apart.

  amd_loop_checks.py [SUMMARY_SCRIPT]   # exit 0 ok, 1 on a failed check
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# (label, mnemonic, operands); "@L" is a branch to label L.
PROGRAM = [
    ("P0", "s_load_dwordx4", "s[0:3], s[4:5], 0x0"),  # the kernel's entry code
    ("P1", "v_mov_b32", "v0, 0"),
    ("P2", "s_branch", "@M"),                 # into the rotated loop, past its test
    ("W", "ds_write_b128", "v1, v[2:5]"),      # the previous K tile's copy into LDS
    ("H", "s_cmp_ge_u32", "s6, s7"),           # the loop test
    ("H1", "s_cbranch_scc1", "@E"),
    ("M", "s_waitcnt", "vmcnt(0)"),
    ("M0", "v_mfma_f32_16x16x32_fp8_fp8", "a[0:3], v[0:1], v[2:3], a[0:3]"),
    ("M1", "s_cmp_lt_u32", "s6, s8"),
    ("M2", "s_cbranch_scc1", "@H"),            # no copy this iteration: to the test
    ("C", "v_cmp_eq_u32_e32", "vcc, 16, v9"),
    ("C1", "s_and_saveexec_b64", "s[8:9], vcc"),
    ("C2", "s_cbranch_execz", "@J"),           # no lane with a partial chunk
    ("T1", "flat_load_ubyte", "v10, v[6:7]"),  # the K tail, byte by byte
    ("T1a", "s_cbranch_execz", "@T3"),
    ("T2", "v_lshl_or_b32", "v10, v11, 8, v10"),
    ("T2a", "s_branch", "@J"),
    ("T3", "flat_load_ubyte", "v11, v[6:7] offset:1"),
    ("T3a", "s_cbranch_execnz", "@T2"),        # backward, but T2 does not dominate T3
    ("J", "s_or_b64", "exec, exec, s[8:9]"),
    ("J1", "flat_load_dwordx4", "v[2:5], v[6:7]"),
    ("J2", "s_branch", "@W"),                  # the latch
    ("E", "s_endpgm", ""),
]
LOOP = {"W", "H", "H1", "M", "M0", "M1", "M2", "C", "C1", "C2", "J", "J1", "J2"}
TAIL = {"T1", "T1a", "T2", "T2a", "T3", "T3a"}


def disassembly():
    """PROGRAM as llvm-objdump -d prints it (4-byte instructions; a branch's operand is
    its offset in dwords from the next instruction, as a 16-bit field)."""
    addr = {lab: 4 * i for i, (lab, _, _) in enumerate(PROGRAM)}
    lines = ["0000000000001000 <kern>:"]
    for i, (_, mn, ops) in enumerate(PROGRAM):
        if ops.startswith("@"):
            ops = str(((addr[ops[1:]] - (4 * i + 4)) // 4) & 0xFFFF)
        lines.append(f"\t{mn} {ops}".rstrip() + f" // {4 * i:012X}: 00000000")
    return "\n".join(lines) + "\n"


def main():
    script = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "scripts", "amd-kernel-summary.py")
    spec = importlib.util.spec_from_file_location("amd_kernel_summary", script)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    insts = m.parse_disassembly(disassembly())["kern"]
    label = {4 * i: lab for i, (lab, _, _) in enumerate(PROGRAM)}
    found = m.main_loop(insts)
    if isinstance(found, list):
        found = (found, [])  # a finder that reports no K tail
    failures = []
    if not isinstance(found, tuple) or len(found) != 2:
        failures.append(f"main_loop returned {found!r}, expected (charged, tail) instruction lists")
    else:
        charged = {label[a] for a, _, _ in found[0]}
        tail = {label[a] for a, _, _ in found[1]}
        if charged != LOOP:
            failures.append(f"charged loop {sorted(charged)}, expected {sorted(LOOP)} "
                            f"(outside the loop: {sorted(charged - LOOP - TAIL)}; missing: {sorted(LOOP - charged)})")
        if tail != TAIL:
            failures.append(f"K-tail path {sorted(tail)}, expected {sorted(TAIL)}")
        counts = m.mix(found[0])
        if counts["mfma"] != 1 or counts["vmem_load"] != 1 or counts["instructions"] != len(LOOP):
            failures.append(f"mix of the charged loop {counts}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"main loop: {len(LOOP)} instructions charged, {len(TAIL)} of the K tail left out, "
              "no entry code")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
