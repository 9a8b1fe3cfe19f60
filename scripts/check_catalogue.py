#!/usr/bin/env python3
"""Fails when a source file outside the tensor catalogue lists a transformer block's matrices.

The tensor catalogue (src/graph/tensor_catalogue.{h,cpp}) is the one table of a model's weight
tensors; weight binding, the synthetic writer, sizes, the weight sources, tensor parallelism
and fusion walk its rows. A file that names three or more of a block's tensors -- by GGUF name
(attn_q, ffn_down ...) or by weight role (ATTN_Q, FFN_DOWN ...), the two spellings of one
tensor counting once -- is spelling the block out again, and the next architecture would have
to be added there too. Allowed: the catalogue, the WeightRole enum that keys it
(graph/op_types.h) and the architecture builders (graph/*_builder.*), which say how the
tensors are used.
Usage: check_catalogue.py SRC_DIR   (prints one line per file that lists them, exit 1 if any)
"""
import os
import re
import sys

# One entry per block tensor: its GGUF name and its WeightRole.
BLOCK_TENSORS = [
    ("attn_norm", "ATTN_NORM"), ("attn_q", "ATTN_Q"), ("attn_k", "ATTN_K"), ("attn_v", "ATTN_V"),
    ("attn_output", "ATTN_OUT"), ("ffn_norm", "FFN_NORM"), ("ffn_gate", "FFN_GATE"), ("ffn_up", "FFN_UP"),
    ("ffn_down", "FFN_DOWN"),
    # latent attention (deepseek2) and its router's selection bias
    ("attn_q_a", "ATTN_Q_A"), ("attn_q_a_norm", "ATTN_Q_A_NORM"), ("attn_q_b", "ATTN_Q_B"),
    ("attn_kv_a_mqa", "ATTN_KV_A_MQA"), ("attn_kv_a_norm", "ATTN_KV_A_NORM"), ("attn_kv_b", "ATTN_KV_B"),
    ("attn_k_b", "ATTN_K_B"), ("attn_v_b", "ATTN_V_B"), ("exp_probs_b", "FFN_EXP_PROBS_B"),
]
LIMIT = 3
ALLOWED = [re.compile(p) for p in (r"^graph/tensor_catalogue\.(h|cpp)$", r"^graph/op_types\.h$",
                                   r"^graph/[a-z0-9_]+_builder\.(h|cpp)$")]
PATTERNS = [(gguf, re.compile(rf"\b({gguf}|{role})\b")) for gguf, role in BLOCK_TENSORS]


def violations(src):
    out = []
    for root, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp", ".hpp", ".cc", ".inc")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            if any(a.match(rel) for a in ALLOWED):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            found = [gguf for gguf, pat in PATTERNS if pat.search(text)]
            if len(found) >= LIMIT:
                out.append(f"src/{rel}: names {len(found)} of a block's tensors ({', '.join(found)}); "
                           f"walk graph/tensor_catalogue.h instead (allowed: at most {LIMIT - 1})")
    return sorted(out)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = violations(sys.argv[1])
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
