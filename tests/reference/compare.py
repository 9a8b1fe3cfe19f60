#!/usr/bin/env python3
"""Engine-vs-reference logits comparison for one generated model (one ctest case).

  compare.py --duet build/duet --arch tiny-llama --dtype q8_0 --seed 11 --workdir DIR

1. duet gen-model --arch ARCH --dtype DTYPE --seed SEED -o DIR/m.gguf
2. duet logits -m DIR/m.gguf --tokens T -o DIR/duet.f32          f32 [n_tokens][n_vocab]
3. forward.py DIR/m.gguf --tokens T -o DIR/ref.f32                 exact float64 reference
   (quantised dtypes also: --act-quant ggml -o DIR/ref_q8.f32, emulating the engine's
   8-bit activation blocks)
4. err = max|duet - ref| / max|ref| must be within the dtype's bound (docs/reference.md), and
   the argmax must agree at every position unless the reference's top two logits are closer
   than the bound allows to resolve (then the engine's pick must be one of those near-ties).
Exit 0 pass, 1 fail, 77 numpy missing (ctest SKIP_RETURN_CODE).
"""

import argparse
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("compare.py: numpy is not installed (scripts/install-deps.sh installs python3-numpy)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import forward  # noqa: E402

# The fixed prompt: BOS then ids spread over a small vocabulary (reduced modulo n_vocab).
TOKENS = [1, 15, 200, 7, 99, 42, 3, 250, 128, 64, 31, 180]

# max|duet - ref| / max|ref| bounds; derivation in docs/reference.md.
#   exact:    against the float64 reference with exactly dequantised weights and f32 activations.
#   emulated: against the reference that quantises activations to 8-bit blocks as the engine does.
BOUNDS = {
    "f32": {"exact": 1e-4},
    "f16": {"exact": 1e-4},
    "bf16": {"exact": 1e-4},
    "q8_0": {"exact": 6e-2, "emulated": 2e-3},
    "q4_0": {"exact": 6e-2, "emulated": 2e-3},
    "q4_k": {"exact": 6e-2, "emulated": 2e-3},
    "q6_k": {"exact": 6e-2, "emulated": 2e-3},
}


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: `{' '.join(cmd)}` exited {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout


def load_logits(path, n_tok, n_vocab, who):
    size = os.path.getsize(path)
    if size != n_tok * n_vocab * 4:
        raise SystemExit(f"FAIL: {who} logits {path} has {size} bytes, expected {n_tok} x {n_vocab} x 4")
    a = np.fromfile(path, dtype="<f4").astype(np.float64).reshape(n_tok, n_vocab)
    if not np.all(np.isfinite(a)):
        raise SystemExit(f"FAIL: {who} logits contain non-finite values")
    return a


def check(name, got, ref, bound):
    """Returns a list of failure strings (empty = pass) and prints the measured figures."""
    scale = np.abs(ref).max()
    err = np.abs(got - ref).max() / scale
    failures = []
    ties = 0
    for t in range(ref.shape[0]):
        r, g = int(np.argmax(ref[t])), int(np.argmax(got[t]))
        if r == g:
            continue
        # Accept a different pick only if the reference cannot separate the two within the bound.
        if ref[t, r] - ref[t, g] <= 2 * bound * scale:
            ties += 1
        else:
            failures.append(f"{name}: argmax differs at position {t}: engine {g} (ref logit {ref[t, g]:.6g}), "
                            f"reference {r} (logit {ref[t, r]:.6g})")
    print(f"  {name}: max|duet-ref|/max|ref| = {err:.3e} (bound {bound:.0e}); argmax equal at "
          f"{ref.shape[0] - ties - len(failures)}/{ref.shape[0]} positions, {ties} near-ties")
    if not err <= bound:
        failures.append(f"{name}: relative error {err:.3e} exceeds the bound {bound:.0e}")
    return failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duet", required=True, help="path of the duet binary")
    ap.add_argument("--arch", required=True, help="gen-model preset, e.g. tiny-llama")
    ap.add_argument("--dtype", required=True, choices=sorted(BOUNDS))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--model", help="use this GGUF instead of running gen-model")
    args = ap.parse_args(argv)

    os.makedirs(args.workdir, exist_ok=True)
    model = args.model or os.path.join(args.workdir, "m.gguf")
    if not args.model:
        run([args.duet, "gen-model", "--arch", args.arch, "--dtype", args.dtype, "--seed", str(args.seed),
             "-o", model])
    ref_model = forward.Model(model)
    n_vocab = ref_model.n_vocab
    tokens = [t % n_vocab for t in TOKENS]
    tok_arg = ",".join(map(str, tokens))
    duet_out = os.path.join(args.workdir, "duet.f32")
    run([args.duet, "logits", "-m", model, "--tokens", tok_arg, "-o", duet_out])
    got = load_logits(duet_out, len(tokens), n_vocab, "duet")

    print(f"{args.arch} {args.dtype} seed {args.seed}: {ref_model.hp.arch}, n_embd {ref_model.hp.n_embd}, "
          f"n_layer {ref_model.hp.n_layer}, n_head {ref_model.hp.n_head}/{ref_model.hp.n_head_kv}, "
          f"n_vocab {n_vocab}, tokens {tok_arg}")
    failures = []
    for mode, bound in BOUNDS[args.dtype].items():
        out = os.path.join(args.workdir, "ref.f32" if mode == "exact" else "ref_q8.f32")
        act = "none" if mode == "exact" else "ggml"
        rc = forward.main([model, "--tokens", tok_arg, "-o", out, "--act-quant", act])
        if rc != 0:
            raise SystemExit(f"FAIL: forward.py exited {rc}")
        ref = load_logits(out, len(tokens), n_vocab, "reference")
        failures += check(f"vs {mode} reference", got, ref, bound)
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
