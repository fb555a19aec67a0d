#!/usr/bin/env python3
"""Per-kernel summary of the AMD code objects of the HIP kernels, read from
the objects that scripts/compile-kernels-amd.sh leaves (OUTDIR/obj/*.o: host
objects whose .hip_fatbin section bundles one code object per target, or
device-only bundles), with the LLVM 15 tools of Debian's HIP packages
(llvm-objcopy, clang-offload-bundler, llvm-readelf, llvm-objdump, llvm-cxxfilt).

Per kernel and target: registers, LDS, scratch and spills from the code
object metadata (NT_AMDGPU_METADATA), an occupancy bound from them, and the
instruction mix of the GEMM main loop from the disassembly. Checks:
  * no kernel uses scratch memory (private segment 0, no VGPR/SGPR spills),
    but the untimed one of EXEMPT (the router);
  * every 256-thread GEMM kernel (gate_up_kernel, down_kernel, fused_kernel)
    has a main loop (the first innermost natural loop with MFMAs) whose MFMAs are all
    of the expected type (fp8 x fp8 on targets with the fp8 MFMA for e4m3
    tiles of K bytes a multiple of 64, bf16 otherwise) and whose count per
    iteration is the tile's: TM x TN fragments per wavefront (the wave grid of
    plan::rules::warp_grid over 4 wavefronts) x 2 MFMAs per 64 bytes of K.
With --check CSV the fresh summary must equal the committed one (so that a
kernel change forces a re-commit: rerun with --out); with both, the fresh
summary is also written to --out (kernels.disassemble_amd leaves it there for
cdna_mix.table_matches_code_objects). Exit 0 ok, 1 on a failed check, 77 when
the tools or objects are missing (CTest "skipped").

  amd-kernel-summary.py --objects DIR --target gfx90a [--out CSV] [--check CSV]
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile

import yaml

LLVM = os.environ.get("TDMSIM_LLVM_BIN", "/usr/lib/llvm-15/bin")

# Occupancy limits of CDNA2 (gfx90a) and CDNA3 (gfx940-942), per SIMD: 512
# vector registers per lane shared by the arch VGPRs and the AGPRs
# (allocated in granules of 8), at most 8 wavefronts; 64 KiB of LDS per CU
# shared by its 4 SIMDs. AMD CDNA3 ISA reference guide, "Vector register
# file" / "Wavefront occupancy"; the ROCm "GPU hardware specifications" table.
VGPRS_PER_SIMD = 512
VGPR_GRANULE = 8
MAX_WAVES_PER_SIMD = 8
LDS_PER_CU = 65536
SIMDS_PER_CU = 4
WAVE = 64

# Kernels allowed scratch or spills, with why; their figures are still in
# the summary, so a change to them still fails the comparison. It is not
# timed (the router; docs/gpu-kernels.md).
EXEMPT = {
    "gating_kernel": "the router, one thread per token: its per-thread score arrays over up "
                     "to kMaxExperts experts are indexed at run time (local memory on NVIDIA too)",
}

FP8_MFMA_TARGETS = {"gfx940", "gfx941", "gfx942", "gfx950"}
MFMA_BF16 = re.compile(r"^v_mfma_f32_16x16x16_?bf16(_1k)?$")
MFMA_FP8 = re.compile(r"^v_mfma_f32_16x16x32_fp8_fp8$")


def tool(name):
    path = os.path.join(LLVM, name)
    return path if os.access(path, os.X_OK) else None


def run(args, stdin=None):
    return subprocess.run(args, input=stdin, capture_output=True, text=True, check=True).stdout


def short_name(demangled):
    s = demangled.replace("tdmsim::gpu::(anonymous namespace)::", "")
    s = s.replace("tdmsim::gpu::", "").replace("unsigned char", "fp8").replace("unsigned short", "bf16")
    s = re.sub(r"^void ", "", s)
    return s


def waves_per_simd(vgprs, lds, wg_size):
    """Wavefronts a SIMD holds: the register file, then LDS (workgroups per CU
    from the static LDS, their wavefronts spread over the 4 SIMDs)."""
    alloc = -(-max(vgprs, 1) // VGPR_GRANULE) * VGPR_GRANULE
    w = min(MAX_WAVES_PER_SIMD, VGPRS_PER_SIMD // alloc)
    if lds > 0:
        waves_per_wg = -(-wg_size // WAVE)
        w = min(w, (LDS_PER_CU // lds) * waves_per_wg // SIMDS_PER_CU)
    return w


def warp_grid(m, n, warps):
    """plan::rules::warp_grid (descriptors/plan/kernel_rules.h)."""
    fm, fn = m // 16, n // 16
    wm = 1 if fm == 1 else (4 if fm >= 8 and fn <= 4 else 2)
    return wm, min(fn, warps // wm)


def gemm_expectation(name, target):
    """(type, MFMAs per main-loop iteration) of a 256-thread GEMM kernel, or None."""
    m = re.match(r"(gate_up_kernel|down_kernel|fused_kernel)<(fp8|bf16), (\d+), (\d+), (\d+), (true|false)(?:, (\d+))?>", name)
    if not m:
        return None
    threads = int(m.group(7) or 256)
    if threads != 256:
        return None  # 384-thread tiles: sm_90a only, an empty trap on AMD
    fp8 = m.group(2) == "fp8"
    bm, bn, bk = int(m.group(3)), int(m.group(4)), int(m.group(5))
    native = fp8 and target in FP8_MFMA_TARGETS and bk % 64 == 0
    wm, wn = warp_grid(bm, bn, 256 // WAVE)
    tm, tn = bm // 16 // wm, bn // 16 // wn
    k_bytes = bk * (1 if native else 2)  # converted e4m3 is multiplied as bf16
    return ("fp8" if native else "bf16"), tm * tn * (k_bytes // 64) * 2


def parse_disassembly(text):
    """{symbol: [(address, mnemonic, operands)]}"""
    funcs, cur = {}, None
    for line in text.splitlines():
        h = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if h:
            cur = funcs.setdefault(h.group(1), [])
            continue
        if cur is None or not line.startswith("\t"):
            continue
        a = re.search(r"// ([0-9A-Fa-f]+):", line)
        if not a:
            continue
        body = line.split("//")[0].strip()
        if not body:
            continue
        parts = body.split(None, 1)
        cur.append((int(a.group(1), 16), parts[0], parts[1] if len(parts) > 1 else ""))
    return funcs


def branch_target(insts, i, index):
    """Index of the instruction branch i jumps to (simm16 in dwords from the
    next instruction), or None."""
    addr, mn, ops = insts[i]
    if not (mn == "s_branch" or mn.startswith("s_cbranch")):
        return None
    try:
        imm = int(ops.split()[0].rstrip(","))
    except (ValueError, IndexError):
        return None
    if imm >= 32768:
        imm -= 65536
    return index.get(addr + 4 + 4 * imm)


def cfg(insts):
    """Basic blocks (split at branches and their targets) as (first, end)
    instruction indices, and each block's successors."""
    index = {addr: i for i, (addr, _, _) in enumerate(insts)}
    n = len(insts)
    leaders = {0}
    for i in range(n):
        t = branch_target(insts, i, index)
        mn = insts[i][1]
        if t is not None:
            leaders.add(t)
        if mn == "s_branch" or mn.startswith("s_cbranch") or mn == "s_endpgm":
            if i + 1 < n:
                leaders.add(i + 1)
    starts = sorted(leaders)
    block_of = {}
    blocks = []
    for bi, st in enumerate(starts):
        end = starts[bi + 1] if bi + 1 < len(starts) else n
        blocks.append((st, end))
        for i in range(st, end):
            block_of[i] = bi
    succ = [[] for _ in blocks]
    for bi, (st, end) in enumerate(blocks):
        last = end - 1
        mn = insts[last][1]
        t = branch_target(insts, last, index)
        if t is not None:
            succ[bi].append(block_of[t])
        if mn != "s_branch" and mn != "s_endpgm" and end < n:
            succ[bi].append(bi + 1)
    return blocks, succ


def dominators(succ):
    """Immediate dominator of every block reachable from block 0 (the entry),
    {block: idom}, the entry its own (Cooper, Harvey and Kennedy, "A Simple,
    Fast Dominance Algorithm", 2001)."""
    order, seen = [], {0}
    stack = [(0, iter(succ[0]))]
    while stack:  # reverse postorder by an iterative depth-first walk
        b, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            order.append(b)
            stack.pop()
        elif nxt not in seen:
            seen.add(nxt)
            stack.append((nxt, iter(succ[nxt])))
    order.reverse()
    rpo = {b: i for i, b in enumerate(order)}
    pred = {b: [] for b in order}
    for u in order:
        for v in succ[u]:
            pred[v].append(u)
    idom = {0: 0}

    def meet(a, b):
        while a != b:
            while rpo[a] > rpo[b]:
                a = idom[a]
            while rpo[b] > rpo[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            done = [p for p in pred[b] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = meet(p, new)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def dominates(idom, a, b):
    """Whether block a dominates block b (both reachable)."""
    return dominated_by_any(idom, (a,), b)


def dominated_by_any(idom, doms, b):
    """Whether one of the blocks `doms` dominates block b: one walk up b's
    dominator chain, instead of one per block (kernels have thousands)."""
    while True:
        if b in doms:
            return True
        if b == idom[b]:
            return False
        b = idom[b]


def loops(insts):
    """Natural loops of the control-flow graph, as sorted lists of instruction
    indices: an edge to a block that dominates its source is a back edge (an
    edge merely to a lower address is not: the compiler places some blocks of
    a branchy region, such as the unrolled byte copy of copy16_async's K tail,
    before the blocks that branch to them); the body is the header plus every
    block that reaches the back edge's source without passing the header.
    Bodies of one header merge."""
    blocks, _, bodies = _loop_blocks(insts)
    return [sorted(i for b in body for i in range(*blocks[b])) for body in bodies]


def _loop_blocks(insts):
    """The basic blocks, their immediate dominators and the body (a set of
    blocks) of each natural loop, by header address."""
    blocks, succ = cfg(insts)
    idom = dominators(succ)
    pred = [[] for _ in blocks]
    for u, vs in enumerate(succ):
        for v in vs:
            pred[v].append(u)
    bodies = {}
    for u, vs in enumerate(succ):
        if u not in idom:
            continue  # unreachable code
        for h in vs:
            if not dominates(idom, h, u):
                continue
            body = bodies.setdefault(h, {h})
            stack = [u]
            while stack:
                x = stack.pop()
                if x in body:
                    continue
                body.add(x)
                stack.extend(pred[x])
    return blocks, idom, [body for h, body in sorted(bodies.items())]


def is_mfma(mn):
    return mn.startswith("v_mfma")


def mix(insts):
    c = {"mfma": 0, "ds_read": 0, "ds_write": 0, "vmem_load": 0, "valu": 0, "salu": 0, "barrier": 0}
    for _, mn, _ in insts:
        if is_mfma(mn):
            c["mfma"] += 1
        elif mn.startswith("ds_read"):
            c["ds_read"] += 1
        elif mn.startswith("ds_write"):
            c["ds_write"] += 1
        elif re.match(r"^(global|flat|buffer)_load", mn):
            c["vmem_load"] += 1
        elif mn == "s_barrier":
            c["barrier"] += 1
        elif mn.startswith("v_"):
            c["valu"] += 1
        elif mn.startswith("s_"):
            c["salu"] += 1
    c["instructions"] = len(insts)
    return c


# A global or flat load of one byte: in our GEMM kernels' main loops only the
# K-tail path of copy16_async (kernels/hip/async_copy.h), which assembles a
# chunk of 1-15 bytes byte by byte.
BYTE_LOAD = re.compile(r"^(global|flat|buffer)_load_(u|s)byte$")


def main_loop(insts):
    """The first (by header address) innermost natural loop that holds MFMAs,
    as (charged, tail) instruction lists, or None. `charged` is what an
    iteration over whole 16-byte chunks runs, counted statically (every path
    of the body once): the body less `tail`, the blocks dominated by a byte
    load, which run only for a K tile whose rows end inside a chunk (a K that
    is not a multiple of 16 bytes; a wavefront skips them, s_cbranch_execz,
    when none of its lanes has such a chunk)."""
    blocks, idom, bodies = _loop_blocks(insts)

    def has(body, pred):
        return any(pred(insts[i][1]) for b in body for i in range(*blocks[b]))

    with_mfma = [body for body in bodies if has(body, is_mfma)]
    inner = [body for body in with_mfma if not any(o < body for o in with_mfma)]
    if not inner:
        return None
    body = min(inner, key=lambda bb: min(blocks[b][0] for b in bb))
    byte_blocks = {b for b in body if has([b], BYTE_LOAD.match)}
    tail = {b for b in body if dominated_by_any(idom, byte_blocks, b)}
    pick = lambda bs: [insts[i] for b in sorted(bs) for i in range(*blocks[b])]
    return pick(body - tail), pick(tail)


COLUMNS = ["kernel", "vgprs", "agprs", "sgprs", "lds_static_bytes", "scratch_bytes", "spills",
           "waves_per_simd", "mfma_type", "mfma_total", "loop_mfma", "loop_ds_read", "loop_ds_write",
           "loop_vmem_load", "loop_valu", "loop_salu", "loop_barrier", "loop_instructions",
           "loop_tail_instructions"]


def summarise(objects, target, problems):
    bundler, readelf, objdump, cxxfilt, objcopy = (
        tool(t) for t in ("clang-offload-bundler", "llvm-readelf", "llvm-objdump", "llvm-cxxfilt", "llvm-objcopy"))
    if not all((bundler, readelf, objdump, cxxfilt, objcopy)):
        print(f"LLVM tools not found under {LLVM}: skipping")
        sys.exit(77)
    objs = sorted(f for f in os.listdir(objects) if f.endswith(".o")) if os.path.isdir(objects) else []
    if not objs:
        print(f"no objects in {objects} (kernels.compile_for_amd skipped or failed): skipping")
        sys.exit(77)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for obj in objs:
            co = os.path.join(tmp, obj + ".co")
            bundle = os.path.join(objects, obj)
            with open(bundle, "rb") as f:
                device_only = f.read(24) == b"__CLANG_OFFLOAD_BUNDLE__"
            if not device_only:
                # A host object: the device code objects are the bundle in its
                # .hip_fatbin section (none: a host-only source, the runner).
                if ".hip_fatbin" not in run([readelf, "-S", "-W", bundle]):
                    continue
                fatbin = os.path.join(tmp, obj + ".fatbin")
                run([objcopy, f"--dump-section=.hip_fatbin={fatbin}", bundle, os.path.join(tmp, "host.o")])
                bundle = fatbin
            run([bundler, "--unbundle", "--type=o", f"--input={bundle}",
                 f"--targets=hipv4-amdgcn-amd-amdhsa--{target}", f"--output={co}"])
            if os.path.getsize(co) == 0:
                problems.append(f"{obj}: no code object for {target}")
                continue
            notes = run([readelf, "--notes", co])
            meta = yaml.safe_load(notes[notes.index("---"):notes.rindex("...")])
            kernels = meta.get("amdhsa.kernels", [])
            names = run([cxxfilt], "\n".join(k[".name"] for k in kernels) + "\n").splitlines()
            funcs = parse_disassembly(run([objdump, "-d", f"--mcpu={target}", co]))
            for k, dem in zip(kernels, names):
                name = short_name(dem)
                insts = funcs.get(k[".name"], [])
                vg, ag = k.get(".vgpr_count", 0), k.get(".agpr_count", 0)
                lds, scratch = k[".group_segment_fixed_size"], k[".private_segment_fixed_size"]
                spills = k.get(".vgpr_spill_count", 0) + k.get(".sgpr_spill_count", 0)
                if (scratch or spills) and name.split("(")[0] not in EXEMPT:
                    problems.append(f"{target} {name}: scratch {scratch} bytes, {spills} spills")
                mfmas = [mn for _, mn, _ in insts if is_mfma(mn)]
                types = sorted({"fp8" if MFMA_FP8.match(mn) else "bf16" if MFMA_BF16.match(mn) else mn for mn in mfmas})
                loop, tail = main_loop(insts) or (None, [])
                lm = mix(loop or [])
                exp = gemm_expectation(name, target)
                if exp:
                    etype, ecount = exp
                    if not loop:
                        problems.append(f"{target} {name}: no main loop with MFMAs")
                    else:
                        loop_types = {"fp8" if MFMA_FP8.match(mn) else "bf16" if MFMA_BF16.match(mn) else mn
                                      for _, mn, _ in loop if is_mfma(mn)}
                        if loop_types != {etype}:
                            problems.append(f"{target} {name}: main loop MFMAs {sorted(loop_types)}, expected {etype}")
                        if lm["mfma"] != ecount:
                            problems.append(f"{target} {name}: {lm['mfma']} MFMAs per main-loop iteration, "
                                            f"the tile needs {ecount}")
                rows.append({
                    "kernel": name, "vgprs": vg, "agprs": ag, "sgprs": k.get(".sgpr_count", 0),
                    "lds_static_bytes": lds, "scratch_bytes": scratch, "spills": spills,
                    "waves_per_simd": waves_per_simd(vg, lds, k.get(".max_flat_workgroup_size", 256)),
                    "mfma_type": "+".join(types) if types else "-", "mfma_total": len(mfmas),
                    **{f"loop_{key}": v for key, v in lm.items()},
                    "loop_tail_instructions": len(tail),
                })
    rows.sort(key=lambda r: r["kernel"])
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue(), len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", required=True, help="directory of the hipcc objects (*.o)")
    ap.add_argument("--target", required=True, help="one offload target, e.g. gfx90a")
    ap.add_argument("--out", help="write the summary CSV here (with --check too: the fresh summary, "
                                  "written whatever the comparison finds)")
    ap.add_argument("--check", help="compare with this committed summary CSV")
    a = ap.parse_args()
    if not a.out and not a.check:
        ap.error("give --out, --check or both")
    if a.out and a.check and os.path.realpath(a.out) == os.path.realpath(a.check):
        ap.error("--out and --check name the same file: the check would compare the summary with itself")
    problems = []
    text, n = summarise(a.objects, a.target, problems)
    for p in problems:
        print("FAIL:", p)
    if a.out:
        # Whole or not at all: a reader (cdna_mix.table_matches_code_objects)
        # must never take a summary cut short for this compile's.
        tmp = f"{a.out}.tmp.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
        print(f"{a.target}: {n} kernels -> {a.out}")
    if a.check:
        try:
            with open(a.check) as f:
                old = f.read()
        except OSError as e:
            print(f"FAIL: {a.check}: {e}")
            return 1
        if old != text:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       a.check, "fresh"))
            print(f"FAIL: {a.check} is not the summary of these kernels: rerun "
                  f"scripts/amd-kernel-summary.py --objects DIR --target {a.target} --out {a.check} "
                  "and commit it")
            return 1
        print(f"{a.target}: {n} kernels, summary as committed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
