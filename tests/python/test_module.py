#!/usr/bin/env python3
"""The Python module tdmsim: YAML, run, capabilities and the descriptor API,
errors as exceptions with the CLI's messages.

  test_module.py SOURCE_DIR TDMSIM_CLI SCRATCH_DIR   (module on PYTHONPATH)
"""
import os
import subprocess
import sys

import numpy as np

import tdmsim
from support import arguments, raises

source, cli, scratch, tiny = arguments()


caps = tdmsim.capabilities()
assert caps["backends"] == ["emulate", "simulate"], caps
assert "custom" in caps["policies"] and caps["api_version"] == 1

# load / validate: the CLI's resolution and messages
doc = tdmsim.load(tiny)
assert doc["model"]["hidden_size"] == 256 and doc["machine"]["name"] == "mi500x-tdm", doc.keys()
bad = os.path.join(scratch, "bad-scenario.yaml")
with open(bad, "w") as f:
    f.write("kind: scenario\nname: bad\nmachine: mi300x\nmodel: qwen3-30b-a3b\ntokens: 0\n")
message = raises(tdmsim.ConfigError, tdmsim.validate, [tiny, bad])
cli_err = subprocess.run([cli, "config", "validate", "--quiet", bad], capture_output=True, text=True)
assert cli_err.returncode == 2
assert message == cli_err.stderr.splitlines()[0], (message, cli_err.stderr)
assert "bad-scenario.yaml:5:" in message and "tokens: must be at least 1" in message
assert isinstance(tdmsim.ConfigError("x"), tdmsim.Error)
# Beyond loading, as `config validate`: a tile the scenario sets that no CU holds.
too_big = os.path.join(scratch, "tile-too-big.yaml")
with open(too_big, "w") as f:
    f.write(f"kind: scenario\nbase: {tiny}\nname: tile-too-big\nkernel:\n  gate_up_tile: 256x256x256x512\n")
cli_err = subprocess.run([cli, "config", "validate", "--quiet", too_big], capture_output=True, text=True)
assert cli_err.returncode == 2 and "does not fit on a CU" in cli_err.stderr, cli_err.stderr
message = raises(tdmsim.ConfigError, tdmsim.validate, [too_big])
assert message == cli_err.stderr.splitlines()[0], (message, cli_err.stderr)

# run: summary.json's layer and paths
summary = tdmsim.run(tiny, path="both")
names = [p["path"] for p in summary["paths"]]
assert names == ["software", "tdm"], names
assert all(p["total_us"] > 0 for p in summary["paths"]), summary["paths"][0].keys()
message = raises(tdmsim.Error, tdmsim.run, tiny, path="tdm", machine="mi300x")
assert "has no tdm: section" in message, message
raises(ValueError, tdmsim.run, tiny, path="sideways")
assert "machine is empty" in raises(ValueError, tdmsim.run, tiny, machine="")  # None keeps the scenario's
assert "machine is empty" in raises(ValueError, tdmsim.Descriptor, tiny, machine="")
assert "NUL" in raises(ValueError, tdmsim.load, tiny + "\0x")  # not cut short at the NUL
assert "array is None" in raises(ValueError, tdmsim.as_float32, None)
# a request stream is many layers: refused at its serving: key, not run as one layer
serving = os.path.join(scratch, "serving.yaml")
with open(serving, "w") as f:
    f.write(f"base: {tiny}\nname: s\nserving:\n  interarrival: 2us\n  requests: 3\n")
assert "serving.yaml:4:3: serving:" in raises(tdmsim.ConfigError, tdmsim.run, serving)
# an expert-parallel layer runs on whole GPUs, here as in `tdmsim run`
ep2 = os.path.join(scratch, "ep2.yaml")
with open(ep2, "w") as f:
    f.write(f"base: {tiny}\nname: ep2\nparallel:\n  ep: 2\n")
assert "has a partition: section" in raises(tdmsim.ConfigError, tdmsim.run, ep2, machine="mi300x-dpx")

# the descriptor API over NumPy
raises(ValueError, tdmsim.Descriptor, tiny, policy="fastest")
message = raises(tdmsim.ConfigError, tdmsim.Descriptor, tiny, experts_per_token=64)
assert "top_k" in message, message
d = tdmsim.create_descriptor(tiny, num_experts=8, experts_per_token=2, policy="custom")
info = d.info
assert info["num_experts"] == 8 and info["hidden_size"] == 256 and info["policy"] == "custom"
x = np.linspace(-1, 1, 4 * 256, dtype=np.float32).reshape(4, 256)
assert "TDMSIM_ERR_ROUTING_MISSING" in raises(tdmsim.Error, d.forward, x)

calls = []


def route(token, row):
    calls.append(token)
    assert row.shape == (256,) and row.dtype == np.float32
    return np.array([token % 8, (token + 3) % 8], dtype=np.uint32), np.array([0.75, 0.25], dtype=np.float32)


d.set_routing(route)
y, res = tdmsim.forward(x, d)
assert calls == [0, 1, 2, 3] and y.shape == (4, 256) and y.dtype == np.float32
assert res["ran"] == "emulate" and not res["fell_back"] and "timing" not in res
ids = np.array([[t % 8, (t + 3) % 8] for t in range(4)], dtype=np.uint32)
w = np.tile(np.array([0.75, 0.25], dtype=np.float32), (4, 1))
y2, _ = d.forward(x, topk_ids=ids, topk_weights=w)
assert np.array_equal(y, y2)
y3, _ = d.forward(x.astype(np.float64))  # converted, same values
assert np.array_equal(y, y3)

d.set_routing(lambda t, row: 1 / 0)
raises(ZeroDivisionError, d.forward, x)
d.set_routing(lambda t, row: (np.array([1], dtype=np.uint32), np.array([1.0], dtype=np.float32)))
assert "expected 2 each" in raises(ValueError, d.forward, x)
d.set_routing(lambda t, row: (np.array([0.5, 1.0]), np.array([0.5, 0.5], dtype=np.float32)))
assert "must hold integers" in raises(ValueError, d.forward, x)
# the routing function cannot replace itself while forward runs: refused, and
# it stays in place (the C side still calls it)
d.set_routing(lambda t, row: (d.set_routing(None), route(t, row))[1])
assert "cannot change while tdmsim_moe_forward runs" in raises(ValueError, d.forward, x)
assert "cannot change while" in raises(ValueError, d.forward, x)
d.set_routing(route)
calls.clear()

assert "TDMSIM_ERR_BACKEND_UNAVAILABLE" in raises(tdmsim.Error, d.forward, x, backend="gpu", allow_fallback=False)
y4, res = d.forward(x, backend="gpu")
assert res["fell_back"] and res["ran"] == "emulate" and np.array_equal(y, y4)
y5, res = d.forward(x, backend="simulate")
assert np.array_equal(y, y5)
t = res["timing"]
assert t["software"]["total_s"] > 0 and t["tdm"]["total_s"] > 0 and t["software"]["sort_s"] > 0
assert [p["path"] for p in t["paths"]] == ["software", "tdm"]
gate_up, down = d.expert_weights(3)
assert gate_up.shape == (256, 256) and down.shape == (256, 128)
raises(ValueError, d.expert_weights, 99)
assert d.launches == 5, d.launches  # the forwards that ran
print("python module: all checks passed")
