#!/usr/bin/env python3
"""Validates the numpy reference on a real trained model, then the engine against it.

  stories_check.py MODELS_DIR [--duet build/duet --workdir DIR]

1. Greedy decoding with forward.py on stories260K.gguf (a Llama trained on TinyStories) from BOS +
   "Once upon a time" must give the known fluent English continuation: this checks the reference
   forward pass independently of duet (a wrong RoPE, norm or attention gives gibberish).
2. With --duet: `duet logits` on that whole greedy sequence must match the reference within 1e-4
   relative (F32 model) with the same argmax at every position.
Exit 77 (skip) when numpy or the model file is absent.
"""

import argparse
import os
import sys

try:
    import numpy as np
except ImportError:
    print("stories_check.py: numpy is not installed", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import forward  # noqa: E402

PROMPT = "Once upon a time"
# Greedy continuation of the prompt by the float64 reference (pieces joined, '▁' -> ' ').
EXPECTED = (" Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
            " One day, she saw a big, red ball.")
N_GENERATE = 40


def spm_greedy_ids(text, vocab):
    """Longest-match tokenisation of SentencePiece pieces ('▁' for spaces, with a leading one):
    enough for this plain-ASCII prompt, not a general tokenizer."""
    s = "\u2581" + text.replace(" ", "\u2581")
    index = {p: i for i, p in enumerate(vocab)}
    ids, i = [], 0
    while i < len(s):
        for j in range(len(s), i, -1):
            if s[i:j] in index:
                ids.append(index[s[i:j]])
                i = j
                break
        else:
            raise SystemExit(f"FAIL: no vocabulary piece matches {s[i:]!r}")
    return ids


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models_dir")
    ap.add_argument("--duet")
    ap.add_argument("--workdir")
    args = ap.parse_args(argv)
    path = os.path.join(args.models_dir, "stories260K.gguf")
    if not os.path.exists(path):
        print(f"stories_check.py: {path} absent, skipping")
        return 77
    m = forward.Model(path)
    vocab = list(m.g.require("tokenizer.ggml.tokens"))
    bos = int(m.g.get("tokenizer.ggml.bos_token_id", 1))
    prompt = spm_greedy_ids(PROMPT, vocab)
    if prompt != [403, 407, 261, 378]:
        print(f"FAIL: prompt pieces {[vocab[t] for t in prompt]} ids {prompt}")
        return 1
    tokens = [bos] + prompt
    for _ in range(N_GENERATE):
        tokens.append(int(np.argmax(m.forward(tokens)[-1])))
    text = "".join(vocab[t] for t in tokens[1:]).replace("\u2581", " ")
    print(f"reference greedy: {text!r}")
    if not text.startswith(EXPECTED) or not text.isascii():
        print(f"FAIL: expected the continuation to start with {EXPECTED!r}")
        return 1

    if args.duet:
        workdir = args.workdir or "."
        os.makedirs(workdir, exist_ok=True)
        tok_arg = ",".join(map(str, tokens))
        out = os.path.join(workdir, "stories_duet.f32")
        compare.run([args.duet, "logits", "-m", path, "--tokens", tok_arg, "-o", out])
        got = compare.load_logits(out, len(tokens), m.n_vocab, "duet")
        failures = compare.check("duet vs reference on stories260K", got, m.forward(tokens), 1e-4)
        for f in failures:
            print("FAIL: " + f)
        if failures:
            return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
