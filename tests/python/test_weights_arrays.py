#!/usr/bin/env python3
"""The Python module's weights, array inputs and sweep reader: expert and
router weights passed to forward, zero-copy arrays (NumPy, the buffer and
array interfaces, DLPack), device arrays refused without the gpu backend, the
gpu backend's fallback reason, and tdmsim.read_sweep on a real sweep.

  test_weights_arrays.py SOURCE_DIR TDMSIM_CLI SCRATCH_DIR   (module on PYTHONPATH,
  TDMSIM_GPU_LIBRARY=none)
"""
import csv
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np

import tdmsim
from support import arguments, raises

source, cli, scratch, tiny = arguments()


d = tdmsim.Descriptor(tiny)
E, H, I = d.info["num_experts"], d.info["hidden_size"], d.info["intermediate_size"]
T = 16
x = np.random.default_rng(1).uniform(-1, 1, (T, H)).astype(np.float32)
ids = np.array([[t % E, (t + 3) % E] for t in range(T)], dtype=np.uint32)
rw = np.tile(np.array([0.625, 0.375], dtype=np.float32), (T, 1))

# --- expert weights: the seed's passed in give the seeded output, bit for bit
w13 = np.stack([d.expert_weights(e)[0] for e in range(E)])  # [E, 2I, H]
w2 = np.stack([d.expert_weights(e)[1] for e in range(E)])   # [E, H, I]
y0, _ = d.forward(x, topk_ids=ids, topk_weights=rw)
y1, _ = d.forward(x, topk_ids=ids, topk_weights=rw, w13=w13, w2=w2)
assert np.array_equal(y0, y1)
# one expert changed: only its tokens change
w2b = w2.copy()
w2b[5] *= 1.5
y2, _ = d.forward(x, topk_ids=ids, topk_weights=rw, w13=w13, w2=w2b)
changed = [t for t in range(T) if not np.array_equal(y0[t], y2[t])]
assert changed == [t for t in range(T) if 5 in ids[t]], changed
# the layer's own weights, any values: the plain NumPy layer on the same
# routing agrees to 1e-4 (fp16 layer: weights, x, intermediate and outputs
# rounded as the kernels store them)
rng = np.random.default_rng(2)
f16 = lambda a: np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
mw13 = rng.uniform(-0.06, 0.06, (E, 2 * I, H)).astype(np.float32)
mw2 = rng.uniform(-0.08, 0.08, (E, H, I)).astype(np.float32)
y3, res = d.forward(x, topk_ids=ids, topk_weights=rw, w13=mw13, w2=mw2)
ref = np.zeros((T, H))
xq = f16(x).astype(np.float64)
for t in range(T):
    for k in range(2):
        e = ids[t, k]
        gu = (f16(mw13[e]).astype(np.float64) @ xq[t]).astype(np.float32)
        if res["kernel_stages"] == 2:  # the gate/up output is stored in fp16
            gu = f16(gu)
        g, u = gu[:I].astype(np.float64), gu[I:].astype(np.float64)
        a = f16(g / (1 + np.exp(-g)) * u).astype(np.float64)
        ref[t] += f16(rw[t, k] * (f16(mw2[e]).astype(np.float64) @ a))
assert np.abs(y3 - ref).max() < 1e-4, np.abs(y3 - ref).max()
assert "w13 must have shape [8, 256, 256], has [4, 256, 256]" in raises(ValueError, d.forward, x, w13=w13[:4])
# the element count alone is not the shape: a flat array is refused too
assert "has [524288]" in raises(ValueError, d.forward, x, w13=w13.reshape(-1))
assert "topk_ids must have shape [16, 2], has [32]" in raises(ValueError, d.forward, x, topk_ids=ids.reshape(-1),
                                                                topk_weights=rw)
# expert ids are integers in 0 .. 2^32 - 1, never wrapped or truncated
for bad, words in (([[0, 2**32 + 1]], "is 4294967297: not an expert id"), ([[0, -1]], "is -1: not an expert id"),
                   ([[0.9, 1.99]], "must hold integers")):
    message = raises(ValueError, d.forward, x[:1], topk_ids=np.array(bad), topk_weights=rw[:1])
    assert words in message, message
assert "args.topk_ids[0, 1] is 9" in raises(ValueError, d.forward, x[:1], topk_ids=np.array([[0, 9]]),
                                            topk_weights=rw[:1])
# non-finite inputs are the caller's, named (not a backend failure)
xn = x.copy()
xn[2, 5] = np.nan
assert "args.x[2, 5] is nan" in raises(ValueError, d.forward, xn)

# --- router weights: W = identity on the first E columns routes each token to
# its two largest x[t][:E]
router = np.zeros((E, H), np.float32)
router[np.arange(E), np.arange(E)] = 1
y4, _ = d.forward(x, router_weights=router)
top2 = np.argsort(-x[:, :E], axis=1)[:, :2].astype(np.uint32)
l0, l1 = np.take_along_axis(x[:, :E], top2.astype(np.int64), axis=1).T
wt = np.stack([1 / (1 + np.exp(l1 - l0)), 1 - 1 / (1 + np.exp(l1 - l0))], axis=1).astype(np.float32)
y5, _ = d.forward(x, topk_ids=top2, topk_weights=wt)
assert np.abs(y4 - y5).max() < 1e-5
assert "router_weights" in raises(ValueError, d.forward, x, router_bias=np.zeros(E, np.float32))


# --- arrays: what forward reads, and when it is the caller's memory
class ArrayInterface:
    """Only __array_interface__ (the protocol torch and others export)."""
    def __init__(self, a):
        self.a = a
        self.__array_interface__ = a.__array_interface__


class DLPackOnly:
    """Only __dlpack__ / __dlpack_device__ (DLPack, as torch tensors have)."""
    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class FakeCuda:
    """__cuda_array_interface__ over host memory: never dereferenced here."""
    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": "<f4",
                                         "data": (a.ctypes.data, False), "version": 3}


assert np.shares_memory(tdmsim.as_float32(x), x)
assert np.shares_memory(tdmsim.as_float32(ArrayInterface(x)), x)
if hasattr(x, "__dlpack__"):  # NumPy >= 1.22
    assert np.shares_memory(tdmsim.as_float32(DLPackOnly(x)), x)
    y6, _ = d.forward(DLPackOnly(x), topk_ids=ids, topk_weights=rw)
    assert np.array_equal(y6, y0)
else:
    print("numpy without __dlpack__: DLPack checks skipped")
assert not np.shares_memory(tdmsim.as_float32(x[:, ::2]), x)            # strided: copied
assert not np.shares_memory(tdmsim.as_float32(x.astype(np.float64)), x)  # other dtype: copied
y7, _ = d.forward(ArrayInterface(x), topk_ids=ArrayInterface(ids), topk_weights=rw,
                  w13=ArrayInterface(w13), w2=memoryview(w2))
assert np.array_equal(y7, y0)
assert "GPU array" in raises(ValueError, d.forward, FakeCuda(x))
# device weights: for the gpu backend only (none here)
message = raises(ValueError, d.forward, x, d_w13=FakeCuda(mw13))
assert "device weights need the gpu backend" in message, message


class DoubleCuda:
    __cuda_array_interface__ = {"shape": (1,), "typestr": "<f8", "data": (0, False), "version": 3}


assert "float32" in raises(ValueError, d.forward, x, d_w13=DoubleCuda())

# --- the gpu backend's absence, and why, arrive with the result
_, res = d.forward(x, backend="gpu")
assert res["fell_back"] and "disabled by TDMSIM_GPU_LIBRARY=none" in res["message"], res["message"]
message = raises(tdmsim.Error, d.forward, x, backend="gpu", allow_fallback=False)
assert "TDMSIM_ERR_BACKEND_UNAVAILABLE" in message and "TDMSIM_GPU_LIBRARY=none" in message

# --- read_sweep on a real sweep
out = os.path.join(scratch, "sweep")
shutil.rmtree(out, ignore_errors=True)
sweep = os.path.join(source, "tests", "data", "sweeps", "tiny.yaml")
subprocess.run([cli, "sweep", sweep, "--output", out, "-j", "2", "--quiet"], check=True,
               stdout=subprocess.DEVNULL)
rows = tdmsim.read_sweep(out)
with open(os.path.join(out, "results.csv"), newline="") as f:
    raw = list(csv.DictReader(f))
assert len(rows) == len(raw) == 3, len(rows)
assert [r["point"] for r in rows] == [0, 1, 2]
assert [r["tokens"] for r in rows] == [1, 2, 4]
assert all(isinstance(r["total_us"], float) and r["total_us"] > 0 for r in rows)
assert all(float(a["total_us"]) == b["total_us"] for a, b in zip(raw, rows))
assert rows[0]["path"] == "software" and rows[0]["capacity"] is None  # an empty cell
cols = tdmsim.read_sweep(os.path.join(out, "results.csv"), as_numpy=True)
assert cols["total_us"].dtype == np.float64 and cols["path"].dtype == object
assert np.array_equal(cols["total_us"], [r["total_us"] for r in rows])
journal = tdmsim.read_sweep(out, journal=True)
assert [j["point"] for j in journal] == [0, 1, 2] and "metrics" in journal[0], journal[0].keys()
# what a killed sweep leaves: a torn CSV line, a point with only some rows, a torn JSON line
torn = os.path.join(scratch, "torn")
shutil.copytree(out, torn, dirs_exist_ok=True)
with open(os.path.join(torn, "results.csv"), "a") as f:
    f.write("3,8,software,qwen3")
with open(os.path.join(torn, "results.jsonl"), "a") as f:
    f.write('{"point": 3, "rows_in_point": 2, "path": "software"}\n{"point": 4, "rows_in')
assert len(tdmsim.read_sweep(torn)) == 3
assert [j["point"] for j in tdmsim.read_sweep(torn, journal=True)] == [0, 1, 2]
raises(FileNotFoundError, tdmsim.read_sweep, os.path.join(scratch, "no-such-sweep"))
# only a torn last line is dropped: a short row mid-file, a file that is no
# sweep's, a special file or the journal asked of a table are refused
lines = open(os.path.join(out, "results.csv")).read().splitlines(True)
mid = os.path.join(scratch, "mid.csv")
with open(mid, "w") as f:
    f.writelines([lines[0], lines[1][:20] + "\n"] + lines[2:])
assert "mid.csv:2: row has" in raises(ValueError, tdmsim.read_sweep, mid)
assert "not a sweep's results" in raises(ValueError, tdmsim.read_sweep, tiny)
assert "not a regular file" in raises(ValueError, tdmsim.read_sweep, "/dev/zero")
assert tdmsim.read_sweep(pathlib.Path(out)) == rows  # a pathlib.Path as well as a str
# a last row cut inside its last field (no newline) is dropped, whatever its fields
cut = os.path.join(scratch, "cut.csv")
with open(cut, "w") as f:
    f.write("".join(lines)[:-3])
assert len(tdmsim.read_sweep(cut)) == len(rows) - 1
assert "journal=True reads results.jsonl" in raises(ValueError, tdmsim.read_sweep, os.path.join(out, "results.csv"),
                                                    journal=True)
print("python weights and arrays: all checks passed")
