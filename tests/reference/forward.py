#!/usr/bin/env python3
"""Independent numpy forward pass for Llama / Mistral / Qwen2, Mixtral / Qwen2-MoE / Qwen3-MoE and DeepSeek-V2/V3 (deepseek2) GGUF files (float64).

Written from the model papers and public configs, not from duet's C++:
  x = token_embd[token]
  for each layer:
      h  = rmsnorm(x) * attn_norm
      q, k, v = Wq h (+bq), Wk h (+bk), Wv h (+bv)          qwen2 has the q/k/v biases
      rope(q), rope(k)                                      llama/mistral: adjacent pairs (2i, 2i+1);
                                                            qwen2: halves (i, i + n_rot/2)
      theta_i = pos * freq_scale * freq_base^(-2i/n_rot) / rope_freqs[i]   (rope_freqs optional:
                                                            Llama-3.1 scaling as stored by llama.cpp)
      causal softmax attention, head h reads kv head h // (n_head / n_head_kv), scale 1/sqrt(head_dim)
      x += Wo attn
      h  = rmsnorm(x) * ffn_norm
      x += Wdown (silu(Wgate h) * Wup h)                  Mixture-of-Experts layers (ffn_gate_inp present):
                                                            moe_mla.py's routed FFN over the 3-D expert
                                                            stacks, + the (gated) shared expert
      (qwen3moe: q and k RMS-normed per head by attn_q_norm / attn_k_norm before RoPE)
      (deepseek2: multi-head latent attention in place of q/k/v, moe_mla.py's absorbed form, see
       mla_attention: the cache holds the normed latent c and the roped shared key k_pe; its MoE
       layers route by softmax or sigmoid, choose by score + exp_probs_b (among the experts of the
       expert_group_used_count best of expert_group_count groups, DeepSeek-V3's group-limited
       routing), and add ungated shared experts; the first leading_dense_block_count layers keep
       the dense FFN; the last nextn_predict_layers blocks are multi-token-prediction blocks, not run)
  logits = Wout (rmsnorm(x) * output_norm)        Wout = output.weight, or token_embd.weight if tied

Optional `kv_f16=True` rounds K (after RoPE) and V to f16, as an f16 KV cache stores them.
Optional `act_quant="ggml"` emulates the engine's 8-bit activation quantisation before every
matmul with a quantised weight (see docs/reference.md): per 32 values for Q8_0/Q4_0/Q5_0 weights, per
256 values for Q4_K/Q6_K, scale d = max|x| / 127 kept in f32, q = round(x / d). (ggml itself
stores the 32-value scale as f16; duet keeps f32, and the emulation follows duet.)

CLI: forward.py MODEL.gguf --tokens 1,2,3 -o ref.f32 [--act-quant ggml] [--kv-f16]
     writes f32 logits [n_tokens][n_vocab].
"""

import argparse
import os
import sys

try:
    import numpy as np
except ImportError:  # the ctest wrapper treats 77 as "skipped"
    print("forward.py: numpy is not installed (scripts/install-deps.sh installs python3-numpy)", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dequant import tensor_to_numpy  # noqa: E402
from gguf_reader import GgufError, GgufFile  # noqa: E402
from moe_mla import limit_groups, moe_route, sigmoid, softmax  # noqa: E402

SUPPORTED_ARCHS = {"llama": "norm", "mistral": "norm", "qwen2": "neox", "qwen2moe": "neox", "qwen3moe": "neox",
                   "deepseek2": "norm"}
# Mixture-of-Experts routing per family: softmax over all experts, the top k, then renormalised to
# sum 1 or not. Mixtral (arch llama with experts): softmax over the k largest logits (arXiv
# 2401.04088), i.e. renormalised; Qwen1.5/2-MoE: norm_topk_prob false in their configs;
# Qwen3-MoE: norm_topk_prob true. llama.cpp applies the same per architecture.
EXPERT_WEIGHTS_NORM = {"llama": True, "mistral": True, "qwen2moe": False, "qwen3moe": True}
# weight type -> (activation block, round the activation scale to f16?)
ACT_QUANT_BLOCK = {"Q8_0": (32, False), "Q4_0": (32, False), "Q5_0": (32, False), "Q4_K": (256, False), "Q6_K": (256, False)}


class Hparams:
    def __init__(self, g):
        arch = g.require("general.architecture")
        if arch not in SUPPORTED_ARCHS:
            raise GgufError(f"{g.path}: general.architecture '{arch}' is not supported "
                            f"(supported: {', '.join(SUPPORTED_ARCHS)})")
        self.arch = arch
        p = arch + "."
        self.n_embd = int(g.require(p + "embedding_length"))
        self.n_layer = int(g.require(p + "block_count"))
        self.n_head = int(g.require(p + "attention.head_count"))
        self.n_head_kv = int(g.get(p + "attention.head_count_kv", self.n_head))
        self.n_ff = int(g.require(p + "feed_forward_length"))
        self.eps = float(g.require(p + "attention.layer_norm_rms_epsilon"))
        self.head_dim = int(g.get(p + "attention.key_length", self.n_embd // self.n_head))
        self.n_rot = int(g.get(p + "rope.dimension_count", self.head_dim))
        self.freq_base = float(g.get(p + "rope.freq_base", 10000.0))
        self.rope_order = SUPPORTED_ARCHS[arch]
        self.sliding_window = int(g.get(p + "attention.sliding_window", 0))
        self.freq_scale = 1.0
        # Linear position scaling; Llama-3.1's scaling arrives as the rope_freqs.weight tensor.
        scaling = g.get(p + "rope.scaling.type", "none")
        if scaling == "linear":
            self.freq_scale = 1.0 / float(g.require(p + "rope.scaling.factor"))
        elif scaling == "yarn" and arch == "deepseek2":
            pass  # read_mla
        elif scaling in ("none", ""):
            if p + "rope.scale_linear" in g.metadata:  # the older spelling of the same thing
                self.freq_scale = 1.0 / float(g.metadata[p + "rope.scale_linear"])
        else:
            raise GgufError(f"{g.path}: {p}rope.scaling.type '{scaling}' is not supported (none, linear)")
        self.mla = arch == "deepseek2"
        if self.mla:
            self.read_mla(g, p)
        value_length = int(g.get(p + "attention.value_length", self.head_dim))
        if not self.mla and value_length != self.head_dim:
            raise GgufError(f"{g.path}: {p}attention.value_length {value_length} differs from key_length "
                            f"{self.head_dim} (not supported)")
        if self.n_head % self.n_head_kv != 0:
            raise GgufError(f"{g.path}: head_count {self.n_head} is not a multiple of head_count_kv {self.n_head_kv}")
        if self.n_rot > self.head_dim or self.n_rot % 2:
            raise GgufError(f"{g.path}: rope.dimension_count {self.n_rot} must be even and <= head_dim {self.head_dim}")
        self.n_expert = int(g.get(p + "expert_count", 0))
        self.n_expert_used = int(g.get(p + "expert_used_count", 0))
        if self.n_expert and not 1 <= self.n_expert_used <= self.n_expert:
            raise GgufError(f"{g.path}: expert_used_count {self.n_expert_used} outside 1..{self.n_expert}")
        if arch.endswith("moe") and not self.n_expert:
            raise GgufError(f"{g.path}: {arch} without {p}expert_count")
        self.expert_norm = EXPERT_WEIGHTS_NORM.get(arch, False)
        self.expert_scale = float(g.get(p + "expert_weights_scale", 1.0))
        self.gating = "softmax"
        self.n_group = self.topk_group = 0
        if self.mla:  # DeepSeek's routing keys (llama.cpp: expert_gating_func 1 softmax, 2 sigmoid)
            self.expert_norm = bool(g.get(p + "expert_weights_norm", False))
            gating = int(g.get(p + "expert_gating_func", 1))
            if gating not in (1, 2):
                raise GgufError(f"{g.path}: {p}expert_gating_func {gating} (allowed: 1 softmax, 2 sigmoid)")
            self.gating = "softmax" if gating == 1 else "sigmoid"
            # DeepSeek-V3's group-limited routing (n_group, topk_group) and its multi-token-
            # prediction blocks: the last nextn_predict_layers of block_count, not part of the
            # forward pass (llama.cpp skips them at inference).
            self.n_group = int(g.get(p + "expert_group_count", 0))
            self.topk_group = int(g.get(p + "expert_group_used_count", self.n_group))
            if self.n_group > 1 and (self.n_expert % self.n_group or not 1 <= self.topk_group <= self.n_group):
                raise GgufError(f"{g.path}: {p}expert_group_count {self.n_group} / expert_group_used_count "
                                f"{self.topk_group} do not split {self.n_expert} experts")
            self.n_nextn = int(g.get(p + "nextn_predict_layers", 0))
            if not 0 <= self.n_nextn < self.n_layer:
                raise GgufError(f"{g.path}: {p}nextn_predict_layers {self.n_nextn} (allowed: 0..{self.n_layer - 1})")
            self.n_layer -= self.n_nextn

    def read_mla(self, g, p):
        """DeepSeek-V2 section 2.1's shapes as llama.cpp's converter writes them: key_length_mla /
        value_length_mla (per head) when present, else key_length / value_length."""
        self.kv_lora_rank = int(g.require(p + "attention.kv_lora_rank"))
        self.q_lora_rank = int(g.get(p + "attention.q_lora_rank", 0))
        if p + "attention.key_length_mla" in g.metadata:
            self.head_dim = int(g.require(p + "attention.key_length_mla"))
            self.v_head_dim = int(g.require(p + "attention.value_length_mla"))
        else:
            self.v_head_dim = int(g.require(p + "attention.value_length"))
        self.n_rot = int(g.require(p + "rope.dimension_count"))
        self.qk_nope = self.head_dim - self.n_rot
        self.n_head_kv = self.n_head
        self.yarn = None
        if g.get(p + "rope.scaling.type", "none") == "yarn":
            self.read_yarn(g, p)

    def read_yarn(self, g, p):
        """YaRN (Peng et al. 2023, arXiv 2309.00071) with DeepSeek's mscale, as the Hugging Face
        DeepSeek modelling code defines it: the converter stores 0.1 x mscale_all_dim as
        yarn_log_multiplier. Pair i's frequency is the interpolated one (/ factor) blended with the
        original by 1 - ramp(i) between the correction dims of beta_fast and beta_slow rotations over
        the original context; cos/sin keep unit size, and the softmax scale gains
        (1 + 0.1 mscale_all_dim ln factor)^2 (when the file gives no multiplier: llama.cpp's rule,
        cos/sin and the scale by 1 + 0.1 ln factor)."""
        factor = float(g.require(p + "rope.scaling.factor"))
        orig = int(g.get(p + "rope.scaling.original_context_length", g.require(p + "context_length")))
        mscale_all = float(g.get(p + "rope.scaling.yarn_log_multiplier", 0.0)) / 0.1
        beta_fast = float(g.get(p + "rope.scaling.yarn_beta_fast", 32.0))
        beta_slow = float(g.get(p + "rope.scaling.yarn_beta_slow", 1.0))
        R, base = self.n_rot, self.freq_base

        def corr_dim(rotations):
            return R * np.log(orig / (rotations * 2 * np.pi)) / (2 * np.log(base))

        low = max(np.floor(corr_dim(beta_fast)), 0)
        high = min(np.ceil(corr_dim(beta_slow)), R - 1)
        ramp = np.clip((np.arange(R // 2) - low) / max(high - low, 0.001), 0, 1)
        extra = 1 - ramp  # the share of the original (extrapolated) frequency
        mag = 1.0 if mscale_all != 0 else 1 + 0.1 * np.log(factor)
        kq = mag * (1 + 0.1 * mscale_all * np.log(factor))
        self.yarn = {"extra": extra, "factor": factor, "mag": mag, "kq": kq * kq}


class Model:
    def __init__(self, path, act_quant="none", kv_f16=False, kv_int8=False):
        if act_quant not in ("none", "ggml"):
            raise ValueError(f"act_quant must be none or ggml, got {act_quant!r}")
        self.act_quant = act_quant
        self.kv_f16 = kv_f16
        self.kv_int8 = kv_int8
        self.g = GgufFile(path)
        self.hp = Hparams(self.g)
        self._cache = {}
        self.routing_margin = float("inf")  # MoE: see moe_ffn
        hp = self.hp
        emb = self.g.tensor("token_embd.weight")
        self.n_vocab = emb.shape[1]
        if emb.shape[0] != hp.n_embd:
            raise GgufError(f"{path}: token_embd.weight has rows of {emb.shape[0]}, expected n_embd {hp.n_embd}")
        self.out_name = "output.weight" if "output.weight" in self.g.tensors else "token_embd.weight"
        self.freq_factors = None
        if "rope_freqs.weight" in self.g.tensors:
            self.freq_factors = self.w("rope_freqs.weight").reshape(-1)
            if self.freq_factors.size != hp.n_rot // 2:
                raise GgufError(f"{path}: rope_freqs.weight has {self.freq_factors.size} values, "
                                f"expected n_rot/2 = {hp.n_rot // 2}")

    def w(self, name):
        if name not in self._cache:
            self._cache[name] = tensor_to_numpy(self.g.tensor(name))
        return self._cache[name]

    def has(self, name):
        return name in self.g.tensors

    # --- building blocks --------------------------------------------------
    def matmul(self, x, name, expert=None):
        """x [n][k] times the weight `name` stored as [n_out][k] -> [n][n_out]; `expert` picks one
        matrix of a per-expert stack [n_expert][n_out][k]."""
        W = self.w(name) if expert is None else self.w(name)[expert]
        if self.act_quant == "ggml":
            tname = self.g.tensor(name).type_name
            if tname in ACT_QUANT_BLOCK:
                block, f16_scale = ACT_QUANT_BLOCK[tname]
                x = quantize_activations(x, block, f16_scale)
        return x @ W.T

    def swiglu(self, h, gate, up, down, expert=None):
        g = self.matmul(h, gate, expert)
        return self.matmul(g / (1.0 + np.exp(-g)) * self.matmul(h, up, expert), down, expert)

    def moe_ffn(self, h, p):
        """The Mixture-of-Experts FFN of moe_mla.py (routing by moe_mla.moe_route), with each
        expert's matmuls on the rows routed to it (so --act-quant applies as for dense ones)."""
        hp = self.hp
        bias = self.w(p + "exp_probs_b.bias").reshape(-1) if self.has(p + "exp_probs_b.bias") else None
        logits = self.matmul(h, p + "ffn_gate_inp.weight")
        ids, w = moe_route(logits, hp.n_expert_used, hp.gating, norm=hp.expert_norm, scale=hp.expert_scale, bias=bias,
                           n_group=hp.n_group, topk_group=hp.topk_group)
        # the smallest gap between the k-th chosen and the best unchosen selection score, over the
        # tokens (with group-limited routing: among the kept groups' experts, and between the last
        # kept and the best dropped group's score)
        scores = softmax(logits) if hp.gating == "softmax" else sigmoid(logits)
        select = scores if bias is None else scores + bias
        if hp.n_group > 1 and hp.topk_group < hp.n_group:
            select, group_score = limit_groups(select, hp.n_group, hp.topk_group)
            gs = np.sort(group_score, axis=-1)[:, ::-1]
            self.routing_margin = min(self.routing_margin, float(np.min(gs[:, hp.topk_group - 1] - gs[:, hp.topk_group])))
        probs = np.sort(select, axis=-1)[:, ::-1]
        if hp.n_expert_used < hp.n_expert:
            gap = float(np.min(probs[:, hp.n_expert_used - 1] - probs[:, hp.n_expert_used]))
            self.routing_margin = min(self.routing_margin, gap)
        out = np.zeros_like(h)
        for e in np.unique(ids):
            t, j = np.nonzero(ids == e)
            d = self.swiglu(h[t], p + "ffn_gate_exps.weight", p + "ffn_up_exps.weight", p + "ffn_down_exps.weight", e)
            np.add.at(out, t, w[t, j][:, None] * d)
        if self.has(p + "ffn_gate_shexp.weight"):
            sh = self.swiglu(h, p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight", p + "ffn_down_shexp.weight")
            if self.has(p + "ffn_gate_inp_shexp.weight"):  # qwen2moe: gated by sigmoid(h . w)
                sh = sh * sigmoid(h @ self.w(p + "ffn_gate_inp_shexp.weight").reshape(-1))[:, None]
            out += sh
        return out

    def round_kv(self, rows):
        """What an f16 or int8 KV cache gives back for rows [T][width] (as attention's K and V)."""
        if self.kv_f16:
            rows = rows.astype(np.float16).astype(np.float64)
        if self.kv_int8:
            rows = quantize_activations(rows, 32, True)
        return rows

    def mla_kv_b(self, p):
        """W_UK^T [H][C][N] and W_UV [H][V][C] with their GGUF names (None for the unsplit attn_kv_b,
        which llama.cpp's older converter wrote as [H * (N + V)][C])."""
        hp = self.hp
        if self.has(p + "attn_k_b.weight"):
            return self.w(p + "attn_k_b.weight"), p + "attn_k_b.weight", self.w(p + "attn_v_b.weight"), p + "attn_v_b.weight"
        kv_b = self.w(p + "attn_kv_b.weight").reshape(hp.n_head, hp.qk_nope + hp.v_head_dim, hp.kv_lora_rank)
        return np.swapaxes(kv_b[:, :hp.qk_nope], 1, 2), None, kv_b[:, hp.qk_nope:], None

    def head_matmul(self, x, W, name, head):
        """x [T][k] times head `head`'s matrix of W [H][n][k]; activation rounding as matmul's."""
        if name is not None:
            return self.matmul(x, name, head)
        return x @ W[head].T

    def mla_attention(self, h, p, pos):
        """Multi-head latent attention of one layer (moe_mla.py's absorbed form), causal over pos.
        q heads are [N no-RoPE | R RoPE] (llama.cpp's layout); RoPE in adjacent pairs."""
        hp = self.hp
        H, C, R, N = hp.n_head, hp.kv_lora_rank, hp.n_rot, hp.qk_nope
        T = h.shape[0]
        if self.has(p + "attn_q_a.weight"):
            qa = self.rmsnorm(self.matmul(h, p + "attn_q_a.weight"), p + "attn_q_a_norm.weight")
            q = self.matmul(qa, p + "attn_q_b.weight")
        else:
            q = self.matmul(h, p + "attn_q.weight")
        q = q.reshape(T, H, N + R)
        q_nope, q_pe = q[..., :N], self.rope(q[..., N:], pos)
        kv_a = self.matmul(h, p + "attn_kv_a_mqa.weight")
        c = self.rmsnorm(kv_a[:, :C], p + "attn_kv_a_norm.weight")
        k_pe = self.rope(kv_a[:, None, C:], pos)[:, 0]
        cache = self.round_kv(np.concatenate([c, k_pe], axis=1))  # the cached row: C + R values
        c, k_pe = cache[:, :C], cache[:, C:]
        k_b, k_name, v_b, v_name = self.mla_kv_b(p)
        q_lat = np.stack([self.head_matmul(q_nope[:, i], k_b, k_name, i) for i in range(H)], axis=1)  # [T][H][C]
        scale = (hp.yarn["kq"] if hp.yarn else 1.0) / np.sqrt(N + R)
        s = (np.einsum("thc,uc->htu", q_lat, c) + np.einsum("thr,ur->htu", q_pe, k_pe)) * scale
        s = np.where(np.arange(T)[None, :] > np.arange(T)[:, None], -np.inf, s)
        o_lat = np.einsum("htu,uc->thc", softmax(s), c)
        o = np.concatenate([self.head_matmul(o_lat[:, i], v_b, v_name, i) for i in range(H)], axis=1)
        return self.matmul(o, p + "attn_output.weight")

    def rmsnorm(self, x, name):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.hp.eps) * self.w(name)

    def rope(self, x, positions):
        """x [n_tok][n_heads][head_dim]; rotates the first n_rot dims of every head."""
        hp = self.hp
        half = hp.n_rot // 2
        inv = hp.freq_base ** (-2.0 * np.arange(half) / hp.n_rot)
        if self.freq_factors is not None:
            inv = inv / self.freq_factors
        mag = 1.0
        if getattr(hp, "yarn", None):  # deepseek2 YaRN: blend per pair, see Hparams.read_yarn
            y = hp.yarn
            inv = inv / y["factor"] * (1 - y["extra"]) + inv * y["extra"]
            mag = y["mag"]
        theta = (np.asarray(positions, dtype=np.float64) * hp.freq_scale)[:, None] * inv[None, :]
        cos, sin = mag * np.cos(theta)[:, None, :], mag * np.sin(theta)[:, None, :]
        out = x.copy()
        if hp.rope_order == "norm":
            a, b = x[..., 0:hp.n_rot:2], x[..., 1:hp.n_rot:2]
            out[..., 0:hp.n_rot:2] = a * cos - b * sin
            out[..., 1:hp.n_rot:2] = a * sin + b * cos
        else:
            a, b = x[..., 0:half], x[..., half:hp.n_rot]
            out[..., 0:half] = a * cos - b * sin
            out[..., half:hp.n_rot] = a * sin + b * cos
        return out

    def attention(self, q, k, v):
        """q [T][n_head][hd], k/v [T][n_head_kv][hd] -> [T][n_head*hd], causal."""
        hp = self.hp
        T = q.shape[0]
        group = hp.n_head // hp.n_head_kv
        kk = np.repeat(k, group, axis=1)  # head h -> kv head h // group
        vv = np.repeat(v, group, axis=1)
        scores = np.einsum("thd,shd->hts", q, kk) / np.sqrt(hp.head_dim)
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        mask = j > i
        if hp.sliding_window > 0:
            mask |= (i - j) >= hp.sliding_window
        scores = np.where(mask[None], -np.inf, scores)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        return np.einsum("hts,shd->thd", p, vv).reshape(T, hp.n_head * hp.head_dim)

    def ffn(self, h, p):
        if self.has(p + "ffn_gate_inp.weight"):
            return self.moe_ffn(h, p)
        return self.swiglu(h, p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight")

    # --- whole model -------------------------------------------------------
    def forward(self, tokens):
        """Logits [n_tokens][n_vocab] (float64) for tokens at positions 0..n-1."""
        hp = self.hp
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.size == 0:
            raise ValueError("forward: no tokens")
        bad = tokens[(tokens < 0) | (tokens >= self.n_vocab)]
        if bad.size:
            raise ValueError(f"forward: token id {int(bad[0])} outside the vocabulary [0, {self.n_vocab})")
        T = tokens.size
        x = self.w("token_embd.weight")[tokens].copy()
        pos = np.arange(T)
        for il in range(hp.n_layer):
            p = f"blk.{il}."
            h = self.rmsnorm(x, p + "attn_norm.weight")
            if hp.mla:
                x = x + self.mla_attention(h, p, pos)
                x = x + self.ffn(self.rmsnorm(x, p + "ffn_norm.weight"), p)
                continue
            q = self.matmul(h, p + "attn_q.weight")
            k = self.matmul(h, p + "attn_k.weight")
            v = self.matmul(h, p + "attn_v.weight")
            if self.has(p + "attn_q.bias"):
                q = q + self.w(p + "attn_q.bias")
                k = k + self.w(p + "attn_k.bias")
                v = v + self.w(p + "attn_v.bias")
            q = q.reshape(T, hp.n_head, hp.head_dim)
            k = k.reshape(T, hp.n_head_kv, hp.head_dim)
            if self.has(p + "attn_q_norm.weight"):  # qwen3: each head RMS-normed before RoPE
                q = self.rmsnorm(q, p + "attn_q_norm.weight")
                k = self.rmsnorm(k, p + "attn_k_norm.weight")
            q = self.rope(q, pos)
            k = self.rope(k, pos)
            v = v.reshape(T, hp.n_head_kv, hp.head_dim)
            if self.kv_f16:  # an f16 KV cache stores K after RoPE, and V, rounded to half
                k = k.astype(np.float16).astype(np.float64)
                v = v.astype(np.float16).astype(np.float64)
            if self.kv_int8:  # an int8 KV cache: each row in 32-value blocks, one f16 scale each (Q8_0)
                k = quantize_activations(k.reshape(T, -1), 32, True).reshape(k.shape)
                v = quantize_activations(v.reshape(T, -1), 32, True).reshape(v.shape)
            x = x + self.matmul(self.attention(q, k, v), p + "attn_output.weight")
            x = x + self.ffn(self.rmsnorm(x, p + "ffn_norm.weight"), p)
        h = self.rmsnorm(x, "output_norm.weight")
        return self.matmul(h, self.out_name)


def quantize_activations(x, block, f16_scale):
    """Round-trip x [n][k] through 8-bit blocks of `block` values: d = max|x| / 127, q = round(x / d)
    (clamped to [-127, 127]); the result is d * q, with d first rounded to f16 when f16_scale (ggml's
    block_q8_0 stores an f16 scale; block_q8_K stores f32). A k that is not a multiple of `block`
    is a caller bug (ggml requires whole blocks)."""
    n, k = x.shape
    if k % block:
        raise ValueError(f"activation row of {k} values is not a multiple of the {block}-value block")
    xb = x.astype(np.float32).astype(np.float64).reshape(n, k // block, block)
    amax = np.abs(xb).max(axis=-1, keepdims=True)
    d = (amax / 127.0).astype(np.float32).astype(np.float64)
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    q = np.clip(np.round(xb * inv), -127, 127)
    if f16_scale:
        d = d.astype(np.float16).astype(np.float64)
    return (q * d).reshape(n, k)


def parse_tokens(s):
    try:
        return [int(t) for t in s.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"forward.py: --tokens must be comma-separated integers, got {s!r}") from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="example: forward.py m.gguf --tokens 1,15043,3186 -o ref.f32")
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("-o", "--output", required=True, help="f32 logits file [n_tokens][n_vocab]")
    ap.add_argument("--act-quant", choices=["none", "ggml"], default="none",
                    help="emulate the engine's 8-bit activation quantisation (default none)")
    ap.add_argument("--kv-f16", action="store_true", help="round K and V to f16 as an f16 KV cache does")
    ap.add_argument("--kv-int8", action="store_true",
                    help="round K and V through 32-value int8 blocks with an f16 scale, as the int8 KV cache does")
    args = ap.parse_args(argv)
    try:
        m = Model(args.model, act_quant=args.act_quant, kv_f16=args.kv_f16, kv_int8=args.kv_int8)
        logits = m.forward(parse_tokens(args.tokens))
    except (GgufError, ValueError, OSError) as e:
        print(f"forward.py: {e}", file=sys.stderr)
        return 2
    tmp = args.output + ".tmp"
    logits.astype("<f4").tofile(tmp)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
