#!/usr/bin/env python3
"""Independent numpy reference (float64) for the Mixture-of-Experts FFN and Multi-head Latent
Attention, written from the papers and the public model configs, not from duet's C++:

Mixture-of-Experts FFN (Mixtral, Qwen2/3-MoE: arXiv 2401.04088; DeepSeek-V2/V3: arXiv 2405.04434,
2412.19437), on the normed input x [T][E]:
    logits = x W_gate_inp^T                                   [T][n_expert]
    scores = softmax(logits) | sigmoid(logits)                gating
    chosen = top-k of (scores + bias)                         bias: DeepSeek-V3's selection-only
                                                              correction (e_score_correction_bias)
             (DeepSeek-V3, n_group > 1: only among the experts of the topk_group groups whose
              two largest scores + bias sum highest; limit_groups)
    w      = scores[chosen]; w /= sum(w) when normalised; w *= scale
    out    = sum_j w_j * down_j(silu(gate_j x) * up_j x)
           + shared(x) [* sigmoid(x . w_shared_gate)]         shared experts (qwen2moe: gated)

Multi-head Latent Attention (DeepSeek-V2 section 2.1), H heads, latent C, RoPE part R, no-RoPE
part N, value head V, positions p:
    q      = W_q_b rmsnorm(W_q_a x) * q_a_norm  (or W_q x)    [T][H][N + R] -> q_nope, q_pe
    kv_a   = W_kv_a x;  c = rmsnorm(kv_a[:C]) * kv_a_norm;  k_pe = kv_a[C:]    (one RoPE key)
    rope(q_pe), rope(k_pe)   adjacent pairs (2i, 2i+1), theta_i = p * base^(-2i/R)
  naive:    k[t,h] = [W_UK[h] c[t] | k_pe[t]],  v[t,h] = W_UV[h] c[t]
            o[t,h] = softmax_causal(q[t,h] . k[:,h] / sqrt(N + R)) . v[:,h]
  absorbed: q_lat[t,h] = W_UK[h]^T q_nope[t,h]                 (C values; what duet plans)
            s[t,h,u] = (q_lat[t,h] . c[u] + q_pe[t,h] . k_pe[u]) / sqrt(N + R)
            o[t,h] = W_UV[h] (softmax_causal(s) . c)
  out = W_o concat_h(o[t,h])
  The cache holds c and k_pe: C + R values per token and layer.
W_UK [H][N][C] and W_UV [H][V][C] are the two halves of W_kv_b (llama.cpp: attn_k_b, attn_v_b).

CLI: moe_mla.py --selftest   checks the invariants below and exits 0 (77 when numpy is missing).
"""

import argparse
import sys

try:
    import numpy as np
except ImportError:  # the ctest wrapper treats 77 as "skipped"
    print("moe_mla.py: numpy is not installed (scripts/install-deps.sh installs python3-numpy)", file=sys.stderr)
    sys.exit(77)


def silu(x):
    return x / (1.0 + np.exp(-x))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def swiglu_ffn(x, gate, up, down):
    """down(silu(gate x) * up x); gate/up [F][E], down [E][F]."""
    return (silu(x @ gate.T) * (x @ up.T)) @ down.T


def limit_groups(select, n_group, topk_group):
    """DeepSeek-V3's group-limited selection (MoEGate, topk_method noaux_tc): the experts are
    n_group groups of consecutive ids; a group's score is the sum of its two largest selection
    scores; the experts outside the topk_group best groups (ties to the lower group) are masked to
    -inf. Returns the masked selection scores [T][n_expert] and the group scores [T][n_group]."""
    T, n = select.shape
    groups = select.reshape(T, n_group, n // n_group)
    group_score = np.sort(groups, axis=-1)[:, :, -2:].sum(axis=-1)
    kept = np.argsort(-group_score, axis=-1, kind="stable")[:, :topk_group]
    mask = np.zeros((T, n_group), dtype=bool)
    np.put_along_axis(mask, kept, True, axis=-1)
    masked = np.where(mask[:, :, None], groups, -np.inf).reshape(T, n)
    return masked, group_score


def moe_route(logits, k, gating="softmax", norm=False, scale=1.0, bias=None, n_group=0, topk_group=0):
    """Expert ids [T][k] (descending by selection score) and their weights [T][k]; with
    n_group > 1 and topk_group < n_group, chosen among the kept groups (limit_groups)."""
    if gating == "softmax":
        scores = softmax(logits)
    elif gating == "sigmoid":
        scores = sigmoid(logits)
    else:
        raise ValueError(f"gating '{gating}' (allowed: softmax, sigmoid)")
    select = scores if bias is None else scores + bias
    if n_group > 1 and topk_group < n_group:
        select, _ = limit_groups(select, n_group, topk_group)
    ids = np.argsort(-select, axis=-1, kind="stable")[:, :k]
    w = np.take_along_axis(scores, ids, axis=-1)
    if norm:
        w = w / np.sum(w, axis=-1, keepdims=True)
    return ids, w * scale


def moe_ffn(x, p, k, gating="softmax", norm=False, scale=1.0, bias=None):
    """p: gate_inp [n_expert][E]; gate_exps, up_exps [n_expert][F][E]; down_exps [n_expert][E][F];
    optional shexp_gate, shexp_up [Fs][E], shexp_down [E][Fs], shexp_gate_inp [E]."""
    ids, w = moe_route(x @ p["gate_inp"].T, k, gating, norm, scale, bias)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(k):
            e = ids[t, j]
            out[t] += w[t, j] * swiglu_ffn(x[t], p["gate_exps"][e], p["up_exps"][e], p["down_exps"][e])
    if "shexp_gate" in p:
        sh = swiglu_ffn(x, p["shexp_gate"], p["shexp_up"], p["shexp_down"])
        if "shexp_gate_inp" in p:
            sh = sh * sigmoid(x @ p["shexp_gate_inp"])[:, None]
        out += sh
    return out


def rope_pairs(x, pos, base):
    """x [..., T, R] rotated by position: adjacent pairs (2i, 2i+1)."""
    r = x.shape[-1]
    inv = base ** (-np.arange(0, r, 2) / r)
    ang = pos[:, None] * inv[None, :]  # [T][R/2]
    c, s = np.cos(ang), np.sin(ang)
    out = x.copy()
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def mla_project(x, p, dims, pos, base=10000.0):
    """q_nope [T][H][N], q_pe [T][H][R] (rotated), c [T][C], k_pe [T][R] (rotated)."""
    H, C, R, N = dims["H"], dims["C"], dims["R"], dims["N"]
    if "q_a" in p:
        q = rmsnorm(x @ p["q_a"].T, p["q_a_norm"]) @ p["q_b"].T
    else:
        q = x @ p["q"].T
    q = q.reshape(x.shape[0], H, N + R)
    q_nope, q_pe = q[..., :N], q[..., N:]
    kv_a = x @ p["kv_a"].T
    c = rmsnorm(kv_a[:, :C], p["kv_a_norm"])
    k_pe = kv_a[:, C:]
    q_pe = rope_pairs(np.swapaxes(q_pe, 0, 1), pos, base)  # [H][T][R]
    q_pe = np.swapaxes(q_pe, 0, 1)
    k_pe = rope_pairs(k_pe, pos, base)
    return q_nope, q_pe, c, k_pe


def causal_mask(n_q, n_ctx):
    """Query t (the last n_q of n_ctx positions) sees context u <= its position."""
    qpos = np.arange(n_ctx - n_q, n_ctx)
    return np.arange(n_ctx)[None, :] <= qpos[:, None]


def mla_naive(q_nope, q_pe, c, k_pe, p, dims):
    H, N, R = dims["H"], dims["N"], dims["R"]
    k_nope = np.einsum("hnc,uc->uhn", p["k_b"], c)  # [U][H][N]
    v = np.einsum("hvc,uc->uhv", p["v_b"], c)       # [U][H][V]
    k = np.concatenate([k_nope, np.broadcast_to(k_pe[:, None, :], (c.shape[0], H, R))], axis=-1)
    q = np.concatenate([q_nope, q_pe], axis=-1)
    s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(N + R)
    s = np.where(causal_mask(q.shape[0], c.shape[0])[None], s, -np.inf)
    o = np.einsum("htu,uhv->thv", softmax(s), v)
    return o.reshape(q.shape[0], -1) @ p["o"].T


def mla_absorbed(q_nope, q_pe, c, k_pe, p, dims):
    N, R = dims["N"], dims["R"]
    q_lat = np.einsum("thn,hnc->thc", q_nope, p["k_b"])  # W_UK^T q_nope
    s = (np.einsum("thc,uc->htu", q_lat, c) + np.einsum("thr,ur->htu", q_pe, k_pe)) / np.sqrt(N + R)
    s = np.where(causal_mask(q_nope.shape[0], c.shape[0])[None], s, -np.inf)
    o_lat = np.einsum("htu,uc->thc", softmax(s), c)
    o = np.einsum("thc,hvc->thv", o_lat, p["v_b"])
    return o.reshape(q_nope.shape[0], -1) @ p["o"].T


# ---------------------------------------------------------------------------------------------
# Self-checks: each compares two independent formulations, so a wrong one cannot pass.

def random_moe(rng, E, F, n_expert, Fs=0, gated_shared=False):
    p = {"gate_inp": rng.standard_normal((n_expert, E)),
         "gate_exps": rng.standard_normal((n_expert, F, E)) / np.sqrt(E),
         "up_exps": rng.standard_normal((n_expert, F, E)) / np.sqrt(E),
         "down_exps": rng.standard_normal((n_expert, E, F)) / np.sqrt(F)}
    if Fs:
        p["shexp_gate"] = rng.standard_normal((Fs, E)) / np.sqrt(E)
        p["shexp_up"] = rng.standard_normal((Fs, E)) / np.sqrt(E)
        p["shexp_down"] = rng.standard_normal((E, Fs)) / np.sqrt(Fs)
        if gated_shared:
            p["shexp_gate_inp"] = rng.standard_normal(E)
    return p


def check(name, got, want, tol=1e-10):
    err = float(np.max(np.abs(np.asarray(got) - np.asarray(want))))
    if not err <= tol:
        print(f"FAIL {name}: max |difference| {err:.3g} > {tol:g}", file=sys.stderr)
        return False
    print(f"ok   {name} (max |difference| {err:.2g})")
    return True


def selftest():
    rng = np.random.default_rng(7)
    ok = True
    T, E, F, n_expert = 5, 16, 12, 6
    x = rng.standard_normal((T, E))
    p = random_moe(rng, E, F, n_expert)

    # Mixtral's formulation: softmax over the k largest logits == softmax over all, top-k, renormalised.
    k = 2
    logits = x @ p["gate_inp"].T
    top = np.argsort(-logits, axis=-1)[:, :k]
    w_mixtral = softmax(np.take_along_axis(logits, top, axis=-1))
    ids, w = moe_route(logits, k, "softmax", norm=True)
    ok &= check("moe: softmax-renormalised top-k equals softmax over the top-k logits", w, w_mixtral)
    ok &= check("moe: the chosen experts are the largest logits", ids, top, 0)

    # Every expert chosen, softmax, no renormalisation: the dense probability-weighted mixture.
    dense = sum(softmax(logits)[:, e:e + 1] * swiglu_ffn(x, p["gate_exps"][e], p["up_exps"][e], p["down_exps"][e])
                for e in range(n_expert))
    ok &= check("moe: k = n_expert equals the dense softmax mixture", moe_ffn(x, p, n_expert), dense)

    # One expert with all the weight is that expert's SwiGLU FFN (top-1, renormalised -> weight 1).
    one = moe_ffn(x, p, 1, "softmax", norm=True)
    ids1, _ = moe_route(logits, 1)
    want = np.stack([swiglu_ffn(x[t], p["gate_exps"][ids1[t, 0]], p["up_exps"][ids1[t, 0]],
                                p["down_exps"][ids1[t, 0]]) for t in range(T)])
    ok &= check("moe: top-1 renormalised is the chosen expert's FFN", one, want)

    # Sigmoid gating (DeepSeek-V3): normalised weights sum to the routed scaling factor; the
    # selection bias changes which experts are chosen but not the weights' source (the scores).
    bias = rng.standard_normal(n_expert)
    ids_b, w_b = moe_route(logits, 3, "sigmoid", norm=True, scale=2.5, bias=bias)
    ok &= check("moe: sigmoid weights normalised sum to the scale", np.sum(w_b, axis=-1), np.full(T, 2.5))
    ok &= check("moe: sigmoid weights come from the unbiased scores",
                w_b / 2.5, (lambda s: s / s.sum(-1, keepdims=True))(np.take_along_axis(sigmoid(logits), ids_b, -1)))
    ok &= check("moe: the bias decides the selection", ids_b,
                np.argsort(-(sigmoid(logits) + bias), axis=-1, kind="stable")[:, :3], 0)

    # Group-limited routing, against a per-token loop over the groups written out directly.
    n_exp_g, n_group, topk_group = 8, 4, 2
    lg = rng.standard_normal((40, n_exp_g))
    bias_g = 0.3 * rng.standard_normal(n_exp_g)
    ids_g, w_g = moe_route(lg, 2, "sigmoid", norm=True, scale=2.5, bias=bias_g, n_group=n_group, topk_group=topk_group)
    want_ids, changed = [], 0
    for t in range(lg.shape[0]):
        sel = sigmoid(lg[t]) + bias_g
        gsc = [sorted(sel[2 * g:2 * g + 2])[-1] + sorted(sel[2 * g:2 * g + 2])[-2] for g in range(n_group)]
        kept = sorted(range(n_group), key=lambda g: (-gsc[g], g))[:topk_group]
        allowed = [e for e in range(n_exp_g) if e // 2 in kept]
        want_ids.append(sorted(allowed, key=lambda e: (-sel[e], e))[:2])
        changed += list(np.argsort(-sel, kind="stable")[:2]) != want_ids[-1]
    ok &= check("moe: group-limited top-k equals the per-group loop", ids_g, np.array(want_ids), 0)
    ok &= check("moe: group-limited weights are the unbiased scores, normalised and scaled",
                w_g, 2.5 * (lambda s: s / s.sum(-1, keepdims=True))(np.take_along_axis(sigmoid(lg), ids_g, -1)))
    if changed == 0:  # the case must exercise the limit, or the checks above cannot fail for it
        print("FAIL moe: group limiting changed no token's choice (the check is vacuous)", file=sys.stderr)
        ok = False
    else:
        print(f"ok   moe: group limiting changed the choice of {changed} of {lg.shape[0]} tokens")
    ok &= check("moe: every group kept equals plain top-k", moe_route(lg, 2, "sigmoid", bias=bias_g, n_group=4,
                                                                      topk_group=4)[0],
                moe_route(lg, 2, "sigmoid", bias=bias_g)[0], 0)

    # Shared experts add to every token, gated by sigmoid(x . w) for qwen2moe.
    ps = random_moe(rng, E, F, n_expert, Fs=20, gated_shared=True)
    routed_only = {kk: v for kk, v in ps.items() if not kk.startswith("shexp")}
    sh = swiglu_ffn(x, ps["shexp_gate"], ps["shexp_up"], ps["shexp_down"]) * sigmoid(x @ ps["shexp_gate_inp"])[:, None]
    ok &= check("moe: shared expert adds its gated FFN", moe_ffn(x, ps, 2, norm=False) - moe_ffn(x, routed_only, 2), sh)

    # MLA: the absorbed form equals the naive one, with and without the low-rank query, for a
    # prefill (every position new) and a decode step (one query against the cached rows).
    for q_lora in (24, 0):
        d = {"H": 4, "C": 12, "R": 8, "N": 10, "V": 6}
        H, C, R, N, V, Em = d["H"], d["C"], d["R"], d["N"], d["V"], 32
        pm = {"kv_a": rng.standard_normal((C + R, Em)) / np.sqrt(Em), "kv_a_norm": 1 + 0.1 * rng.standard_normal(C),
              "k_b": rng.standard_normal((H, N, C)) / np.sqrt(C), "v_b": rng.standard_normal((H, V, C)) / np.sqrt(C),
              "o": rng.standard_normal((Em, H * V)) / np.sqrt(H * V)}
        if q_lora:
            pm["q_a"] = rng.standard_normal((q_lora, Em)) / np.sqrt(Em)
            pm["q_a_norm"] = 1 + 0.1 * rng.standard_normal(q_lora)
            pm["q_b"] = rng.standard_normal((H * (N + R), q_lora)) / np.sqrt(q_lora)
        else:
            pm["q"] = rng.standard_normal((H * (N + R), Em)) / np.sqrt(Em)
        xs = rng.standard_normal((7, Em))
        pos = np.arange(7, dtype=np.float64)
        qn, qp, c, kp = mla_project(xs, pm, d, pos)
        ok &= check(f"mla (q_lora_rank {q_lora}): absorbed equals naive, prefill of 7",
                    mla_absorbed(qn, qp, c, kp, pm, d), mla_naive(qn, qp, c, kp, pm, d), 1e-9)
        ok &= check(f"mla (q_lora_rank {q_lora}): absorbed equals naive, decode at position 6",
                    mla_absorbed(qn[6:], qp[6:], c, kp, pm, d), mla_naive(qn[6:], qp[6:], c, kp, pm, d), 1e-9)
        # The cache: what the absorbed form reads per token is c and k_pe, C + R values.
        ok &= check(f"mla (q_lora_rank {q_lora}): cached values per token", c.shape[1] + kp.shape[1], C + R, 0)
        # Causality: a later token does not change an earlier output.
        first = mla_absorbed(qn[:3], qp[:3], c[:3], kp[:3], pm, d)
        ok &= check(f"mla (q_lora_rank {q_lora}): causal", mla_absorbed(qn, qp, c, kp, pm, d)[:3], first, 1e-9)

    # A wrong absorption (W_UK not transposed per head) must differ: the check above can fail.
    d = {"H": 2, "C": 6, "R": 4, "N": 6, "V": 3}
    pm = {"kv_a": rng.standard_normal((10, 8)), "kv_a_norm": np.ones(6), "k_b": rng.standard_normal((2, 6, 6)),
          "v_b": rng.standard_normal((2, 3, 6)), "o": np.eye(8, 6), "q": rng.standard_normal((20, 8))}
    qn, qp, c, kp = mla_project(rng.standard_normal((3, 8)), pm, d, np.arange(3.0))
    wrong = dict(pm, k_b=np.swapaxes(pm["k_b"], 1, 2))
    diff = np.max(np.abs(mla_absorbed(qn, qp, c, kp, wrong, d) - mla_naive(qn, qp, c, kp, pm, d)))
    if diff < 1e-6:
        print("FAIL mla: a transposed W_UK went unnoticed", file=sys.stderr)
        ok = False
    else:
        print(f"ok   mla: a transposed W_UK differs from the naive form ({diff:.2g})")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true", help="check the invariants and exit")
    a = ap.parse_args()
    if not a.selftest:
        ap.error("nothing to do (use --selftest; the functions are imported by the engine comparisons)")
    sys.exit(0 if selftest() else 1)


if __name__ == "__main__":
    main()
