#!/usr/bin/env python3
"""Seed 000 sections 5-6 with the tdmsim module (docs/api.md "Python").

TdmMoeLayer is the seed's layer: a softmax top-2 gate and eight experts with
weights of its own. Its software path is a plain NumPy loop over the experts
(the seed's _forward_software); its TDM path hands the layer and its expert
weights to a tdmsim descriptor with policy custom, the gate running in the
routing callback. The benchmark asks
the simulate backend for both paths' predicted latency on the scenario's
machine; the correctness check compares the two outputs to 1e-4.

  PYTHONPATH=build/python python3 tdm_moe_layer.py examples/c/tiny-moe.yaml
"""
import sys

import numpy as np

import tdmsim


def fp16(a):
    """Round to the layer dtype (fp16, nearest-even) as its kernels store."""
    return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


class TdmMoeLayer:
    def __init__(self, scenario, num_experts=8, top_k=2, seed=3):
        self.descriptor = tdmsim.create_descriptor(scenario, num_experts=num_experts,
                                                   experts_per_token=top_k, policy="custom")
        info = self.descriptor.info
        self.num_experts, self.top_k = info["num_experts"], info["experts_per_token"]
        self.hidden = info["hidden_size"]
        rng = np.random.default_rng(seed)
        self.gate = (rng.random((self.num_experts, self.hidden), dtype=np.float32) - 0.5) * 0.2
        # The layer's own expert weights, in the layer dtype (fp16), handed to every
        # forward: gate_up [2I, H] (gate rows, then up rows) and down [H, I] per expert.
        inter = info["intermediate_size"]
        self.w13 = fp16(rng.uniform(-0.06, 0.06, (self.num_experts, 2 * inter, self.hidden)))
        self.w2 = fp16(rng.uniform(-0.08, 0.08, (self.num_experts, self.hidden, inter)))
        self.experts = list(zip(self.w13, self.w2))
        self.descriptor.set_routing(self.route)

    def route(self, token, x_row):
        logits = self.gate.astype(np.float64) @ x_row.astype(np.float64)
        ids = np.argsort(-logits, kind="stable")[: self.top_k]
        w = np.exp(logits[ids] - logits[ids[0]])
        return ids.astype(np.uint32), (w / w.sum()).astype(np.float32)

    def forward(self, x, use_tdm=False, backend="emulate"):
        if use_tdm:
            y, result = self.descriptor.forward(x, backend=backend, w13=self.w13, w2=self.w2)
            return y, result
        return self._forward_software(x, stages=self._stages), None

    def _forward_software(self, x, stages):
        y = np.zeros_like(x, dtype=np.float64)
        inter = self.experts[0][1].shape[1]
        for t, row in enumerate(x.astype(np.float64)):
            ids, w = self.route(t, x[t])
            for e, wk in zip(ids, w):
                gate_up, down = self.experts[e]
                gu = (gate_up.astype(np.float64) @ row).astype(np.float32)
                if stages == 2:
                    gu = fp16(gu)
                g, u = gu[:inter], gu[inter:]
                act = fp16(g / (np.float32(1) + np.exp(-g)) * u)
                out = (down.astype(np.float64) @ act.astype(np.float64)).astype(np.float32)
                y[t] += fp16(out * wk)
        return y.astype(np.float32)


def main():
    scenario = sys.argv[1] if len(sys.argv) > 1 else "examples/c/tiny-moe.yaml"
    print("capabilities:", tdmsim.get_capabilities())
    layer = TdmMoeLayer(scenario)
    x = fp16(np.random.default_rng(1).uniform(-1, 1, (32, layer.hidden)))

    # 6.1: TDM vs software, predicted by the simulate backend
    y_tdm, result = layer.forward(x, use_tdm=True, backend="simulate")
    timing = result["timing"]
    sw, tdm = timing["software"]["total_s"], timing["tdm"]["total_s"]
    print(f"software path {sw * 1e6:.2f} us, TDM path {tdm * 1e6:.2f} us on {layer.descriptor.info['machine']}")
    print(f"TDM speedup over software: {sw / tdm:.2f}x (latency {100 * (sw - tdm) / sw:.1f}% lower)")

    # 6.2: correctness, software vs TDM to 1e-4
    layer._stages = result["kernel_stages"]
    y_sw, _ = layer.forward(x, use_tdm=False)
    diff = np.abs(y_sw - y_tdm)
    print(f"max diff {diff.max():.3g}, mean diff {diff.mean():.3g}")
    ok = diff.max() <= 1e-4
    print("agreement to 1e-4:", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
