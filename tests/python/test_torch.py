#!/usr/bin/env python3
"""torch tensors straight into the tdmsim module: a contiguous CPU float32
tensor is read in place (no copy), others are converted once, and the output
matches the NumPy call. Exits 77 (CTest: skipped) when torch is not importable.

  test_torch.py SOURCE_DIR   (module on PYTHONPATH)
"""
import os
import sys

try:
    import torch
except ImportError:
    print("torch is not installed: skipped")
    sys.exit(77)

import numpy as np

import tdmsim

tiny = os.path.join(sys.argv[1], "examples", "c", "tiny-moe.yaml")
d = tdmsim.Descriptor(tiny)
H = d.info["hidden_size"]
x = torch.linspace(-1, 1, 8 * H, dtype=torch.float32).reshape(8, H)
view = tdmsim.as_float32(x)
assert view.ctypes.data == x.data_ptr(), "a contiguous CPU float32 tensor must be read in place"
y_t, res = d.forward(x)
y_n, _ = d.forward(x.numpy())
assert np.array_equal(y_t, y_n) and res["ran"] == "emulate"
y_half, _ = d.forward(x.to(torch.float64))  # converted once
assert np.array_equal(y_half, y_n)
assert tdmsim.as_float32(x.t()).ctypes.data != x.data_ptr()  # not contiguous: a copy
w13 = torch.stack([torch.from_numpy(d.expert_weights(e)[0]) for e in range(d.info["num_experts"])])
w2 = torch.stack([torch.from_numpy(d.expert_weights(e)[1]) for e in range(d.info["num_experts"])])
y_w, _ = d.forward(x, w13=w13, w2=w2)
assert np.array_equal(y_w, y_n)
if torch.cuda.is_available():
    # a CUDA tensor is a device array: refused as a host array, taken as d_w13
    try:
        d.forward(x.cuda())
        raise AssertionError("a CUDA x was accepted as a host array")
    except ValueError as e:
        assert "GPU array" in str(e)
print("torch tensors: all checks passed")
