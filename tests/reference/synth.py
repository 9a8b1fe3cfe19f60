"""Tiny synthetic GGUF models for the reference's self-tests (not duet's gen-model: these exist so
the reference can be checked without the engine). Includes simple vectorised quantizers that
produce valid ggml blocks; their quality does not matter, only that the bytes follow the layout.
"""

import numpy as np

from gguf_reader import ARRAY, FLOAT32, INT32, STRING, UINT32
from gguf_writer import write_gguf


def _f16(x):
    return np.asarray(x, dtype="<f2")


def quant_q8_0(x):
    b = x.reshape(-1, 32)
    d = _f16(np.abs(b).max(axis=1) / 127)
    dd = d.astype(np.float64)
    q = np.round(np.divide(b, dd[:, None], out=np.zeros_like(b), where=dd[:, None] != 0)).astype(np.int8)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1).tobytes()


def quant_q4_0(x):
    b = x.reshape(-1, 32)
    d = _f16(np.abs(b).max(axis=1) / 7)
    dd = d.astype(np.float64)[:, None]
    q = np.clip(np.round(np.divide(b, dd, out=np.zeros_like(b), where=dd != 0)) + 8, 0, 15).astype(np.uint8)
    qs = q[:, :16] | (q[:, 16:] << 4)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), qs], axis=1).tobytes()


def quant_q5_0(x):
    b = x.reshape(-1, 32)
    d = _f16(np.abs(b).max(axis=1) / 15)
    dd = d.astype(np.float64)[:, None]
    q = np.clip(np.round(np.divide(b, dd, out=np.zeros_like(b), where=dd != 0)) + 16, 0, 31).astype(np.uint32)
    qs = ((q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)).astype(np.uint8)
    qh = ((q >> 4) << np.arange(32, dtype=np.uint32)).sum(axis=1).astype("<u4")  # bit e = fifth bit of e
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), qh.view(np.uint8).reshape(-1, 4), qs], axis=1).tobytes()


def quant_q4_k(x):
    b = x.reshape(-1, 8, 32)
    n = b.shape[0]
    lo = np.minimum(b.min(axis=2), 0.0)
    scale = (b.max(axis=2) - lo) / 15
    d = _f16(scale.max(axis=1) / 63)
    dmin = _f16((-lo).max(axis=1) / 63)
    dd, dm = d.astype(np.float64)[:, None], dmin.astype(np.float64)[:, None]
    sc = np.clip(np.round(np.divide(scale, dd, out=np.zeros_like(scale), where=dd != 0)), 0, 63).astype(np.int64)
    m = np.clip(np.round(np.divide(-lo, dm, out=np.zeros_like(lo), where=dm != 0)), 0, 63).astype(np.int64)
    step = (dd * sc)[:, :, None]
    q = np.round(np.divide(b + (dm * m)[:, :, None], step, out=np.zeros_like(b), where=step != 0))
    q = np.clip(q, 0, 15).astype(np.uint8)
    s = np.zeros((n, 12), dtype=np.int64)
    s[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    s[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:8] & 15) | ((m[:, 4:8] & 15) << 4)
    q = q.reshape(n, 4, 2, 32)
    qs = q[:, :, 0] | (q[:, :, 1] << 4)
    return np.concatenate([d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2),
                           s.astype(np.uint8), qs.reshape(n, 128)], axis=1).tobytes()


def quant_q6_k(x):
    b = x.reshape(-1, 16, 16)
    n = b.shape[0]
    scale = np.abs(b).max(axis=2) / 31
    d = _f16(scale.max(axis=1) / 127)
    dd = d.astype(np.float64)[:, None]
    sc = np.clip(np.round(np.divide(scale, dd, out=np.zeros_like(scale), where=dd != 0)), -128, 127)
    step = (dd * sc)[:, :, None]
    q = np.clip(np.round(np.divide(b, step, out=np.zeros_like(b), where=step != 0)) + 32, 0, 63).astype(np.int64)
    q = q.reshape(n, 2, 4, 32)  # half, part (l, l+32, l+64, l+96), l
    ql = np.zeros((n, 2, 64), dtype=np.int64)
    ql[:, :, 0:32] = (q[:, :, 0] & 15) | ((q[:, :, 2] & 15) << 4)
    ql[:, :, 32:64] = (q[:, :, 1] & 15) | ((q[:, :, 3] & 15) << 4)
    qh = (q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6)
    return np.concatenate([ql.reshape(n, 128).astype(np.uint8), qh.reshape(n, 64).astype(np.uint8),
                           sc.astype(np.int8).view(np.uint8), d.view(np.uint8).reshape(-1, 2)], axis=1).tobytes()


def encode(x, dtype):
    x = np.ascontiguousarray(x, dtype=np.float64)
    if dtype == "F32":
        return x.astype("<f4").tobytes()
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    if dtype == "BF16":
        return (x.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()  # truncation is fine here
    return {"Q8_0": quant_q8_0, "Q4_0": quant_q4_0, "Q5_0": quant_q5_0, "Q4_K": quant_q4_k, "Q6_K": quant_q6_k}[dtype](x.reshape(-1))


def make_model(path, arch, seed=0, dtype="F32", n_embd=64, n_head=4, n_head_kv=2, n_ff=96, n_layer=2,
               n_vocab=64, values=None, bias=None, tied=False, rope_freqs=None, freq_base=10000.0, n_expert=0,
               n_expert_used=0):
    """Writes a random model; `values` (name -> numpy array) overrides generated weights. n_expert > 0:
    every layer's FFN is n_expert experts n_ff wide (Mixtral's tensors: an F32 router
    ffn_gate_inp and 3-D ffn_{gate,up,down}_exps stacks), top n_expert_used."""
    rng = np.random.default_rng(seed)
    hd = n_embd // n_head
    bias = (arch == "qwen2") if bias is None else bias
    shapes = {"token_embd.weight": (n_vocab, n_embd), "output_norm.weight": (n_embd,)}
    if not tied:
        shapes["output.weight"] = (n_vocab, n_embd)
    for i in range(n_layer):
        p = f"blk.{i}."
        shapes.update({p + "attn_norm.weight": (n_embd,), p + "attn_q.weight": (n_head * hd, n_embd),
                       p + "attn_k.weight": (n_head_kv * hd, n_embd), p + "attn_v.weight": (n_head_kv * hd, n_embd),
                       p + "attn_output.weight": (n_embd, n_head * hd), p + "ffn_norm.weight": (n_embd,)})
        if n_expert:
            shapes.update({p + "ffn_gate_inp.weight": (n_expert, n_embd),
                           p + "ffn_gate_exps.weight": (n_expert, n_ff, n_embd),
                           p + "ffn_up_exps.weight": (n_expert, n_ff, n_embd),
                           p + "ffn_down_exps.weight": (n_expert, n_embd, n_ff)})
        else:
            shapes.update({p + "ffn_gate.weight": (n_ff, n_embd), p + "ffn_up.weight": (n_ff, n_embd),
                           p + "ffn_down.weight": (n_embd, n_ff)})
        if bias:
            shapes.update({p + "attn_q.bias": (n_head * hd,), p + "attn_k.bias": (n_head_kv * hd,),
                           p + "attn_v.bias": (n_head_kv * hd,)})
    tensors = []
    for name, shape in shapes.items():
        if values is not None and name in values:
            x = np.asarray(values[name], dtype=np.float64).reshape(shape)
        elif len(shape) == 1:
            x = 1.0 + 0.1 * rng.standard_normal(shape) if name.endswith("norm.weight") else 0.1 * rng.standard_normal(shape)
        else:
            x = rng.standard_normal(shape) / np.sqrt(shape[-1])
        t = dtype if len(shape) >= 2 and not name.endswith("ffn_gate_inp.weight") else "F32"  # routers stay F32
        if t in ("Q4_K", "Q6_K") and shape[-1] % 256:
            t = "Q8_0"  # k-quants need rows of 256; fall back like llama.cpp's quantizer
        tensors.append((name, list(reversed(shape)), t, encode(x, t)))
    if rope_freqs is not None:
        tensors.append(("rope_freqs.weight", [len(rope_freqs)], "F32", encode(np.asarray(rope_freqs), "F32")))
    p = arch + "."
    md = [("general.architecture", STRING, arch), (p + "embedding_length", UINT32, n_embd),
          (p + "block_count", UINT32, n_layer), (p + "attention.head_count", UINT32, n_head),
          (p + "attention.head_count_kv", UINT32, n_head_kv), (p + "feed_forward_length", UINT32, n_ff),
          (p + "attention.layer_norm_rms_epsilon", FLOAT32, 1e-5), (p + "rope.freq_base", FLOAT32, freq_base),
          (p + "rope.dimension_count", UINT32, hd),
          ("tokenizer.ggml.model", STRING, "llama"),
          *([(p + "expert_count", UINT32, n_expert), (p + "expert_used_count", UINT32, n_expert_used)] if n_expert else []),
          ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"t{i}" for i in range(n_vocab)])),
          ("tokenizer.ggml.token_type", ARRAY, (INT32, [1] * n_vocab))]
    write_gguf(path, md, tensors)


def permute_for_norm_rope(values, n_head, n_head_kv, head_dim):
    """Reorders the rows of every head of Wq/Wk (and their biases) so that the NEOX pair
    (i, i + head_dim/2) lands on the adjacent pair (2i, 2i + 1)."""
    half = head_dim // 2
    perm = np.stack([np.arange(half), np.arange(half) + half], axis=1).reshape(-1)
    out = dict(values)
    for name, v in values.items():
        if "attn_q." in name or "attn_k." in name:
            nh = n_head if "attn_q." in name else n_head_kv
            w = v.reshape(nh, head_dim, -1)[:, perm]
            out[name] = w.reshape(v.shape)
    return out
