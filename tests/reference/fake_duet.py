#!/usr/bin/env python3
"""A stand-in for the `duet` binary, used only by selftest.py to check that compare.py passes a
correct engine and fails broken ones. `gen-model` writes a synth.py model with the shape of a tiny
preset; `logits` runs a float32 forward with ggml-style 8-bit activation blocks (a plausible
engine), optionally with a deliberate bug chosen by FAKE_DUET_BUG:
  rope_order  rotate the other element order     no_bias   ignore the q/k/v biases
  f16_acts    round activations to f16            none      (default) no bug
  no_renorm   route without renormalising the top-k weights (Mixtral renormalises)
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward  # noqa: E402
import synth  # noqa: E402

PRESETS = {  # arch, shape (a subset of gen-model's tiny presets, shrunk)
    "tiny-llama": ("llama", dict(n_embd=64, n_head=4, n_head_kv=4, n_ff=192, n_vocab=256)),
    "tiny-qwen2": ("qwen2", dict(n_embd=96, n_head=6, n_head_kv=2, n_ff=256, n_vocab=256, tied=True)),
    "small-llama": ("llama", dict(n_embd=256, n_head=4, n_head_kv=2, n_ff=256, n_vocab=256)),
    "tiny-mixtral": ("llama", dict(n_embd=64, n_head=4, n_head_kv=2, n_ff=96, n_vocab=256, n_expert=4, n_expert_used=2)),
}


class Engine(forward.Model):
    bug = os.environ.get("FAKE_DUET_BUG", "none")

    def w(self, name):
        return super().w(name).astype(np.float32)

    def has(self, name):
        return super().has(name) and not (self.bug == "no_bias" and name.endswith(".bias"))

    def matmul(self, x, name, expert=None):
        x = np.asarray(x, dtype=np.float32)
        if self.bug == "f16_acts":
            x = x.astype(np.float16).astype(np.float32)
        tname = self.g.tensor(name).type_name
        if tname in forward.ACT_QUANT_BLOCK:
            block, f16_scale = forward.ACT_QUANT_BLOCK[tname]
            x = forward.quantize_activations(x.astype(np.float64), block, f16_scale).astype(np.float32)
        return x @ (self.w(name) if expert is None else self.w(name)[expert]).T

    def moe_ffn(self, h, p):
        if self.bug == "no_renorm":
            self.hp.expert_norm = False
        return super().moe_ffn(h, p)

    def rope(self, x, positions):
        if self.bug == "rope_order":
            self.hp.rope_order = "neox" if self.hp.rope_order == "norm" else "norm"
            try:
                return super().rope(x, positions)
            finally:
                self.hp.rope_order = "neox" if self.hp.rope_order == "norm" else "norm"
        return super().rope(x, positions)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen-model")
    g.add_argument("--arch", required=True)
    g.add_argument("--dtype", required=True)
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("-o", required=True)
    lg = sub.add_parser("logits")
    lg.add_argument("-m", required=True)
    lg.add_argument("--tokens", required=True)
    lg.add_argument("-o", required=True)
    lg.add_argument("--kv-type", default="f32")
    a = ap.parse_args()
    if a.cmd == "gen-model":
        arch, kw = PRESETS[a.arch]
        synth.make_model(a.o, arch, seed=a.seed, dtype=a.dtype.upper(), **kw)
    else:
        logits = Engine(a.m, kv_f16=a.kv_type == "f16").forward(forward.parse_tokens(a.tokens))
        logits.astype("<f4").tofile(a.o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
