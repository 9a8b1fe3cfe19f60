#!/usr/bin/env python3
"""Self-checks of the numpy reference: GGUF parsing of files written by gguf_writer.py (every
metadata type, nested arrays, v2/v3, alignment, hostile headers), dequantizers on hand-built
blocks and on the real shared files, and invariants of the forward pass on tiny synthetic models.

Run: /usr/bin/python3 tests/reference/selftest.py [SHARED_MODELS_DIR]   (exit 77 without numpy)
"""

import os
import struct
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:
    print("selftest.py: numpy is not installed", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dequant  # noqa: E402
import forward  # noqa: E402
import gguf_reader as gr  # noqa: E402
from gguf_writer import write_gguf  # noqa: E402
from synth import make_model, permute_for_norm_rope  # noqa: E402

SHARED_MODELS = os.environ.get("DUET_SHARED_MODELS", "")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def f16_bytes(x):
    return np.array([x], dtype="<f2").tobytes()


# ---- element-wise packers written from the layout description (independent of dequant.py) ----
def pack_q8_0(d, q):
    return f16_bytes(d) + bytes((int(v) & 0xFF) for v in q)


def pack_q4_0(d, q):  # q: 32 ints in 0..15; value j<16 -> low nibble of byte j, j>=16 -> high nibble of j-16
    qs = bytearray(16)
    for j, v in enumerate(q):
        qs[j % 16] |= (v << 4) if j >= 16 else v
    return f16_bytes(d) + bytes(qs)


def pack_q5_0(d, q):  # q: 32 ints in 0..31; low 4 bits as pack_q4_0, bit 4 of value e -> bit e of u32 qh
    qh = 0
    for e, v in enumerate(q):
        qh |= ((int(v) >> 4) & 1) << e
    return f16_bytes(d) + qh.to_bytes(4, "little") + pack_q4_0(0.0, [int(v) & 15 for v in q])[2:]


def pack_q4_k(d, dmin, sc, m, q):  # sc, m: 8 six-bit ints; q: 256 ints in 0..15
    s = bytearray(12)
    for j in range(8):
        if j < 4:
            s[j] |= sc[j] & 63
            s[j + 4] |= m[j] & 63
        else:
            s[j + 4] |= (sc[j] & 15) | ((m[j] & 15) << 4)
            s[j - 4] |= (sc[j] >> 4) << 6
            s[j] |= (m[j] >> 4) << 6
    qs = bytearray(128)
    for i, v in enumerate(q):
        sub, l = divmod(i, 32)
        g, hi = divmod(sub, 2)
        qs[32 * g + l] |= (v << 4) if hi else v
    return f16_bytes(d) + f16_bytes(dmin) + bytes(s) + bytes(qs)


def pack_q6_k(d, scales, q):  # scales: 16 int8; q: 256 ints in 0..63 (stored value, before -32)
    ql, qh = bytearray(128), bytearray(64)
    for i, v in enumerate(q):
        h, r = divmod(i, 128)
        part, l = divmod(r, 32)  # part 0..3: l, l+32, l+64, l+96
        lo4, hi2 = v & 15, v >> 4
        byte = 64 * h + l + (32 if part in (1, 3) else 0)
        ql[byte] |= (lo4 << 4) if part >= 2 else lo4
        qh[32 * h + l] |= hi2 << (2 * part)
    return bytes(ql) + bytes(qh) + bytes((s & 0xFF) for s in scales) + f16_bytes(d)


def f16_scalar(h):
    """IEEE 754 binary16 from its bit pattern, by the formula (no numpy float16)."""
    sign = -1.0 if h >> 15 else 1.0
    e, f = (h >> 10) & 31, h & 1023
    if e == 0:
        return sign * f * 2.0 ** -24
    if e == 31:
        return sign * float("inf") if f == 0 else float("nan")
    return sign * (1 + f / 1024.0) * 2.0 ** (e - 15)


class DequantTest(unittest.TestCase):
    def test_known_blocks(self):
        # Q4_0: d = 1.0 (0x3C00); byte 0 = 0x9F -> value 0 = 15 - 8 = 7, value 16 = 9 - 8 = 1.
        blk = bytes([0x00, 0x3C, 0x9F] + [0x88] * 15)
        y = dequant.deq_q4_0(np.frombuffer(blk, np.uint8))
        self.assertEqual(y[0], 7.0)
        self.assertEqual(y[16], 1.0)
        self.assertTrue(np.all(y[[j for j in range(32) if j not in (0, 16)]] == 0.0))
        # Q8_0: d = 0.5 (0x3800); q = -128 .. at byte 2.
        blk = bytes([0x00, 0x38, 0x80, 0x7F, 0x01] + [0] * 29)
        y = dequant.deq_q8_0(np.frombuffer(blk, np.uint8))
        self.assertEqual(list(y[:4]), [-64.0, 63.5, 0.5, 0.0])
        # Q5_0: d = 0.5 (0x3800); qh = 01 02 00 80 sets the fifth bit of values 0, 9 and 31;
        # qs[0] = 0x3A -> value 0 = 10 | 16 = 26, value 16 = 3 (no fifth bit);
        # qs[15] = 0xF0 -> value 15 = 0, value 31 = 15 | 16 = 31; every other value 0.
        blk = bytes([0x00, 0x38, 0x01, 0x02, 0x00, 0x80, 0x3A] + [0] * 14 + [0xF0])
        y = dequant.deq_q5_0(np.frombuffer(blk, np.uint8))
        self.assertEqual(y[0], 0.5 * (26 - 16))
        self.assertEqual(y[16], 0.5 * (3 - 16))
        self.assertEqual(y[9], 0.0)
        self.assertEqual(y[15], 0.5 * (0 - 16))
        self.assertEqual(y[31], 0.5 * (31 - 16))
        self.assertTrue(np.all(y[[j for j in range(32) if j not in (0, 9, 16, 31)]] == -8.0))
        # Q4_K: d = 1, dmin = 0.5; scales[0] = 0xC1 -> sc0 = 1 and the top bits (3) of sc4;
        # scales[8] = 0x25 -> sc4 = 5 | 3 << 4 = 53, m4 = 2 | (scales[4] >> 6) << 4 = 2 + 16 * 2.
        s = [0xC1, 0, 0, 0, 0x83, 0, 0, 0, 0x25, 0, 0, 0]
        qs = [0] * 128
        qs[0] = 0x3A  # value 0 (sub 0) = 10, value 32 (sub 1) = 3
        qs[0] |= 0
        blk = bytes([0x00, 0x3C, 0x00, 0x38] + s + qs)
        y = dequant.deq_q4_k(np.frombuffer(blk, np.uint8))
        # sub 0: sc = 1, m = scales[4] & 63 = 3 -> 1 * 10 - 0.5 * 3
        self.assertEqual(y[0], 10 - 1.5)
        self.assertEqual(y[32], 0 * 3 - 0.5 * 0)  # sub 1: sc = 0, m = 0
        # value 128 is sub 4 (low nibbles of qs[64..96]) = 0: - dmin * m4 = -0.5 * 34
        self.assertEqual(y[128], -0.5 * 34)
        # Q6_K: d = 2; ql[0] = 0x21, qh[0] = 0b11_10_01_00 -> values 0/32/64/96 of half 0 are
        # (1 | 0 << 4) - 32, (0 | 1 << 4) - 32, (2 | 2 << 4) - 32, (0 | 3 << 4) - 32.
        ql = [0] * 128
        ql[0] = 0x21
        qh = [0] * 64
        qh[0] = 0b11100100
        scales = [1, -1, 2, 0, 3, 0, -2, 0] + [1] * 8
        blk = bytes(ql + qh + [(v & 0xFF) for v in scales]) + f16_bytes(2.0)
        y = dequant.deq_q6_k(np.frombuffer(blk, np.uint8))
        self.assertEqual(y[0], 2 * 1 * (1 - 32))
        self.assertEqual(y[32], 2 * 2 * (16 - 32))
        self.assertEqual(y[64], 2 * 3 * (34 - 32))
        self.assertEqual(y[96], 2 * -2 * (48 - 32))
        self.assertEqual(y[16], 2 * -1 * (0 - 32))
        self.assertEqual(y[128], 2 * 1 * (0 - 32))  # second half uses scales[8..]

    def test_random_blocks_match_elementwise_layout(self):
        rng = np.random.default_rng(7)
        for _ in range(20):
            d, dmin = [float(np.float16(v)) for v in rng.uniform(-2, 2, 2)]
            q = rng.integers(-128, 128, 32)
            y = dequant.deq_q8_0(np.frombuffer(pack_q8_0(d, q), np.uint8))
            np.testing.assert_array_equal(y, d * q)
            q = rng.integers(0, 16, 32)
            y = dequant.deq_q4_0(np.frombuffer(pack_q4_0(d, q), np.uint8))
            np.testing.assert_array_equal(y, d * (q - 8))
            q = rng.integers(0, 32, 32)
            y = dequant.deq_q5_0(np.frombuffer(pack_q5_0(d, q), np.uint8))
            np.testing.assert_array_equal(y, d * (q - 16))
            sc, m, q = rng.integers(0, 64, 8), rng.integers(0, 64, 8), rng.integers(0, 16, 256)
            y = dequant.deq_q4_k(np.frombuffer(pack_q4_k(d, dmin, sc, m, q), np.uint8))
            sub = np.arange(256) // 32
            np.testing.assert_allclose(y, d * sc[sub] * q - dmin * m[sub], rtol=0, atol=1e-12)
            scales, q = rng.integers(-128, 128, 16), rng.integers(0, 64, 256)
            y = dequant.deq_q6_k(np.frombuffer(pack_q6_k(d, scales, q), np.uint8))
            np.testing.assert_allclose(y, d * scales[np.arange(256) // 16] * (q - 32), rtol=0, atol=1e-12)
        # Several blocks in a row keep their order.
        blocks = [pack_q4_0(float(k + 1), [k % 16] * 32) for k in range(3)]
        y = dequant.deq_q4_0(np.frombuffer(b"".join(blocks), np.uint8))
        np.testing.assert_array_equal(y.reshape(3, 32)[:, 0], [(k + 1) * (k - 8) for k in range(3)])

    def test_half_and_bfloat(self):
        bits = np.array([0x0000, 0x8000, 0x3C00, 0xC000, 0x0001, 0x03FF, 0x7BFF, 0x3555], dtype="<u2")
        y = dequant.deq_f16(bits.view(np.uint8))
        self.assertEqual(list(y), [f16_scalar(int(b)) for b in bits])
        f = np.array([1.0, -2.5, 3.140625, 2.0 ** -100, -65280.0, 3.0e38], dtype="<f4")
        f = (f.view("<u4") & 0xFFFF0000).view("<f4")  # bf16-exact values
        top = (f.view("<u4") >> 16).astype("<u2")
        np.testing.assert_array_equal(dequant.deq_bf16(top.view(np.uint8)), f.astype(np.float64))
        with self.assertRaises(ValueError):
            dequant.dequantize("Q5_K", np.zeros(176, np.uint8))
        with self.assertRaises(ValueError):
            dequant.deq_q8_0(np.zeros(35, np.uint8))

    def test_real_files(self):
        stories = os.path.join(SHARED_MODELS, "stories260K.gguf")
        tiny = os.path.join(SHARED_MODELS, "llama-2-tiny-random.gguf")
        if not (SHARED_MODELS and os.path.exists(stories) and os.path.exists(tiny)):
            self.skipTest("shared models absent")
        g = gr.GgufFile(stories)
        t = g.tensor("blk.0.attn_norm.weight")
        raw = bytes(t.data)
        expect = struct.unpack(f"<{t.n_elements}f", raw)
        np.testing.assert_array_equal(dequant.tensor_to_numpy(t), expect)
        self.assertEqual(dequant.tensor_to_numpy(g.tensor("token_embd.weight")).shape, (512, 64))
        g = gr.GgufFile(tiny)
        t = g.tensor("token_embd.weight")
        self.assertEqual(t.type_name, "F16")
        y = dequant.tensor_to_numpy(t)
        self.assertEqual(y.shape, (32000, 8))
        raw = bytes(t.data)
        for row in (0, 1, 12345, 31999):
            for col in range(8):
                (h,) = struct.unpack_from("<H", raw, 2 * (row * 8 + col))
                self.assertEqual(y[row, col], f16_scalar(h))
        self.assertTrue(np.all(np.isfinite(y)))


class GgufTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "t.gguf")

    def tearDown(self):
        self.dir.cleanup()

    def test_every_type_round_trips(self):
        md = [
            ("u8", gr.UINT8, 255), ("i8", gr.INT8, -128), ("u16", gr.UINT16, 65535), ("i16", gr.INT16, -32768),
            ("u32", gr.UINT32, 4294967295), ("i32", gr.INT32, -2147483648), ("f32", gr.FLOAT32, 0.25),
            ("b", gr.BOOL, True), ("s", gr.STRING, "héllo ▁wörld"), ("u64", gr.UINT64, 2 ** 64 - 1),
            ("i64", gr.INT64, -(2 ** 63)), ("f64", gr.FLOAT64, 1e-300),
            ("arr.i32", gr.ARRAY, (gr.INT32, [1, -2, 3])), ("arr.s", gr.ARRAY, (gr.STRING, ["a", "", "ü"])),
            ("arr.b", gr.ARRAY, (gr.BOOL, [True, False])), ("arr.empty", gr.ARRAY, (gr.FLOAT32, [])),
            ("arr.nested", gr.ARRAY, (gr.ARRAY, [(gr.UINT8, [1, 2]), (gr.STRING, ["x"])])),
        ]
        a = np.arange(12, dtype="<f4")
        h = np.arange(64, dtype="<f2")
        for version, align in ((2, None), (3, None), (3, 64)):
            tensors = [("a", [4, 3], "F32", a.tobytes()), ("h", [64], "F16", h.tobytes()),
                       ("q", [32, 2], "Q8_0", pack_q8_0(1.0, range(32)) + pack_q8_0(-2.0, range(32)))]
            write_gguf(self.path, md, tensors, version=version, alignment=align)
            g = gr.GgufFile(self.path)
            self.assertEqual(g.version, version)
            self.assertEqual(g.alignment, align or 32)
            self.assertEqual(g.data_offset % g.alignment, 0)
            for key, vtype, v in md:
                self.assertEqual(g.types[key], vtype, key)
                if vtype == gr.ARRAY:
                    got = g.metadata[key]
                    self.assertEqual(got.elem_type, v[0])
                    if v[0] == gr.ARRAY:
                        self.assertEqual([(x.elem_type, list(x)) for x in got], [(e, list(i)) for e, i in v[1]])
                    else:
                        self.assertEqual(list(got), list(v[1]))
                else:
                    self.assertEqual(g.metadata[key], v, key)
            self.assertEqual(list(g.tensors), ["a", "h", "q"])
            np.testing.assert_array_equal(dequant.tensor_to_numpy(g.tensor("a")), a.reshape(3, 4))
            np.testing.assert_array_equal(dequant.tensor_to_numpy(g.tensor("h")), h)
            q = dequant.tensor_to_numpy(g.tensor("q"))
            np.testing.assert_array_equal(q, [np.arange(32), -2.0 * np.arange(32)])
            for t in g.tensors.values():
                self.assertEqual(t.offset % g.alignment, 0)

    def expect_error(self, data, text):
        with open(self.path, "wb") as f:
            f.write(data)
        with self.assertRaises(gr.GgufError) as cm:
            gr.GgufFile(self.path)
        self.assertIn(self.path, str(cm.exception))
        self.assertIn(text, str(cm.exception))

    def test_hostile_headers(self):
        write_gguf(self.path, [("k", gr.UINT32, 1)], [("a", [8], "F32", np.zeros(8, "<f4").tobytes())])
        good = read_bytes(self.path)
        self.expect_error(b"", "truncated")
        self.expect_error(b"GGUX" + good[4:], "bad magic")
        self.expect_error(good[:4] + struct.pack("<I", 1) + good[8:], "unsupported GGUF version 1")
        self.expect_error(good[:4] + struct.pack("<I", 4) + good[8:], "unsupported GGUF version 4")
        self.expect_error(good[:30], "truncated")
        self.expect_error(good[:-4], "outside the file")
        self.expect_error(good[:8] + struct.pack("<Q", 2 ** 60) + good[16:], "truncated")
        self.expect_error(good[:16] + struct.pack("<Q", 2 ** 62) + good[24:], "truncated")
        # The tensor info sits right after the kv; patch its type and offset.
        info = good.index(b"\x01\x00\x00\x00\x00\x00\x00\x00a") + 9
        type_at = info + 4 + 8
        self.expect_error(good[:type_at] + struct.pack("<I", 99) + good[type_at + 4:], "unknown ggml type 99")
        off_at = type_at + 4
        self.expect_error(good[:off_at] + struct.pack("<Q", 4) + good[off_at + 8:], "not a multiple of the alignment")
        kv_type_at = good.index(b"k") + 1
        self.expect_error(good[:kv_type_at] + struct.pack("<I", 13) + good[kv_type_at + 4:], "unknown value type 13")
        write_gguf(self.path, [], [("q", [33], "Q8_0", b"\0" * 68)])
        self.expect_error(read_bytes(self.path), "not a multiple of the Q8_0 block size")


class ForwardTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def logits(self, arch, name, **kw):
        p = self.path(name)
        make_model(p, arch, **kw)
        return forward.Model(p).forward([1, 5, 9, 2, 33, 17, 4])

    def test_causal_and_finite(self):
        p = self.path("m.gguf")
        make_model(p, "llama", seed=3)
        m = forward.Model(p)
        full = m.forward([1, 5, 9, 2, 33, 17, 4])
        self.assertTrue(np.all(np.isfinite(full)))
        np.testing.assert_allclose(m.forward([1, 5, 9]), full[:3], rtol=1e-12, atol=1e-12)
        self.assertGreater(np.abs(full[3] - full[2]).max(), 1e-3)  # different tokens, different logits

    def test_quantised_storage_equals_dequantised_f32(self):
        for dt in ("Q8_0", "Q4_0", "Q5_0", "Q4_K", "Q6_K", "F16", "BF16"):
            a = self.logits("llama", "q.gguf", seed=4, dtype=dt, n_embd=256, n_ff=256)
            g = gr.GgufFile(self.path("q.gguf"))
            values = {n: dequant.tensor_to_numpy(t) for n, t in g.tensors.items()}
            b = self.logits("llama", "f.gguf", seed=4, n_embd=256, n_ff=256, values=values)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * np.abs(a).max(), err_msg=dt)

    def test_gqa_equals_duplicated_kv_heads(self):
        a = self.logits("llama", "gqa.gguf", seed=5, n_head=4, n_head_kv=2)
        g = gr.GgufFile(self.path("gqa.gguf"))
        values = {n: dequant.tensor_to_numpy(t) for n, t in g.tensors.items()}
        hd = 64 // 4
        for n in list(values):
            if n.endswith(("attn_k.weight", "attn_v.weight")):  # [2*hd][n_embd] -> [4*hd][n_embd]
                w = values[n].reshape(2, hd, -1)
                values[n] = np.repeat(w, 2, axis=0).reshape(4 * hd, -1)
        b = self.logits("llama", "mha.gguf", seed=5, n_head=4, n_head_kv=4, values=values)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(a).max())

    def test_neox_equals_norm_order_on_permuted_weights(self):
        # qwen2 (NEOX halves) with weights W == llama (adjacent pairs) with the rows of Wq/Wk (and
        # biases) of each head permuted so that pair (i, i + n_rot/2) becomes (2i, 2i + 1).
        a = self.logits("qwen2", "qwen.gguf", seed=6)
        g = gr.GgufFile(self.path("qwen.gguf"))
        values = {n: dequant.tensor_to_numpy(t) for n, t in g.tensors.items()}
        self.assertIn("blk.0.attn_q.bias", values)
        values = permute_for_norm_rope(values, n_head=4, n_head_kv=2, head_dim=16)
        b = self.logits("llama", "llama.gguf", seed=6, values=values, bias=True)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(a).max())
        c = self.logits("llama", "llama2.gguf", seed=6, values=None, bias=True)
        self.assertGreater(np.abs(a - c).max(), 1e-3)

    def test_tied_output_and_rope_freqs(self):
        a = self.logits("llama", "tied.gguf", seed=8, tied=True)
        g = gr.GgufFile(self.path("tied.gguf"))
        self.assertNotIn("output.weight", g.tensors)
        values = {n: dequant.tensor_to_numpy(t) for n, t in g.tensors.items()}
        values["output.weight"] = values["token_embd.weight"]
        b = self.logits("llama", "untied.gguf", seed=8, values=values)
        np.testing.assert_array_equal(a, b)
        c = self.logits("llama", "ones.gguf", seed=8, values=values, rope_freqs=np.ones(8))
        np.testing.assert_allclose(b, c, rtol=0, atol=1e-12 * np.abs(b).max())
        d = self.logits("llama", "freqs.gguf", seed=8, values=values, rope_freqs=np.linspace(1, 8, 8))
        self.assertGreater(np.abs(b - d).max(), 1e-3)

    def test_rope_matches_scalar_formula(self):
        p = self.path("r.gguf")
        make_model(p, "llama", seed=9, rope_freqs=np.linspace(1, 4, 8), freq_base=500.0)
        m = forward.Model(p)
        rng = np.random.default_rng(1)
        x = rng.normal(size=(1, 1, 16))
        for order in ("norm", "neox"):
            m.hp.rope_order = order
            y = m.rope(x, [7])[0, 0]
            expect = x[0, 0].copy()
            for i in range(8):
                theta = 7 * 500.0 ** (-2 * i / 16) / m.freq_factors[i]
                a, b = (2 * i, 2 * i + 1) if order == "norm" else (i, i + 8)
                expect[a] = x[0, 0, a] * np.cos(theta) - x[0, 0, b] * np.sin(theta)
                expect[b] = x[0, 0, a] * np.sin(theta) + x[0, 0, b] * np.cos(theta)
            np.testing.assert_allclose(y, expect, rtol=1e-13, atol=1e-13)

    def test_bad_models_are_errors(self):
        p = self.path("bad.gguf")
        make_model(p, "gpt2")
        with self.assertRaises(gr.GgufError) as cm:
            forward.Model(p)
        self.assertIn("general.architecture 'gpt2' is not supported (supported: llama, mistral, qwen2, qwen2moe, qwen3moe, deepseek2)",
                      str(cm.exception))
        make_model(p, "llama", n_head=4, n_head_kv=3)
        with self.assertRaises(gr.GgufError) as cm:
            forward.Model(p)
        self.assertIn("head_count 4 is not a multiple of head_count_kv 3", str(cm.exception))
        make_model(p, "llama")
        out = self.path("x.f32")
        self.assertEqual(forward.main([p, "--tokens", "1,64", "-o", out]), 2)  # n_vocab is 64
        self.assertFalse(os.path.exists(out))
        self.assertEqual(forward.main([p, "--tokens", "1,63", "-o", out]), 0)
        self.assertEqual(os.path.getsize(out), 2 * 64 * 4)

    def test_activation_quantisation(self):
        x = np.zeros((1, 32))
        x[0, :4] = [127.0, -63.4, 0.6, -0.4]
        y = forward.quantize_activations(x, 32, True)
        np.testing.assert_array_equal(y[0, :4], [127.0, -63.0, 1.0, 0.0])
        x = np.linspace(-3, 5, 256)[None, :]
        y = forward.quantize_activations(x, 256, False)
        d = np.float32(5.0 / 127)
        self.assertLessEqual(np.abs(y - x).max(), d / 2 + 1e-9)
        self.assertEqual(len(np.unique(np.round(y / d))), len(np.unique(y)))
        np.testing.assert_array_equal(forward.quantize_activations(np.zeros((2, 32)), 32, True), 0)


class HarnessTest(unittest.TestCase):
    """compare.py against fake_duet.py: passes a correct engine, fails deliberately broken ones."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.duet = os.path.join(self.dir.name, "duet")
        here = os.path.dirname(os.path.abspath(__file__))
        with open(self.duet, "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "{here}/fake_duet.py" "$@"\n')
        os.chmod(self.duet, 0o755)
        self.old_bug = os.environ.pop("FAKE_DUET_BUG", None)

    def tearDown(self):
        os.environ.pop("FAKE_DUET_BUG", None)
        if self.old_bug is not None:
            os.environ["FAKE_DUET_BUG"] = self.old_bug
        self.dir.cleanup()

    def compare(self, arch, dtype, bug="none", expect_type=None, kv_type="f32"):
        import compare
        import contextlib
        import io

        os.environ["FAKE_DUET_BUG"] = bug
        args = ["--duet", self.duet, "--arch", arch, "--dtype", dtype, "--workdir", self.dir.name,
                "--kv-type", kv_type]
        if expect_type:
            args += ["--expect-type", expect_type]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = compare.main(args)
        return rc, out.getvalue()

    def test_correct_engine_passes(self):
        for arch, dtype in (("tiny-qwen2", "f32"), ("tiny-llama", "q8_0"), ("small-llama", "q4_k"),
                            ("tiny-mixtral", "q8_0")):
            rc, out = self.compare(arch, dtype, expect_type=dtype)
            self.assertEqual(rc, 0, out)
            self.assertIn("PASS", out)
        rc, out = self.compare("tiny-qwen2", "f32", kv_type="f16")
        self.assertEqual(rc, 0, out)

    def test_broken_engines_fail(self):
        for arch, dtype, bug, text in (("tiny-llama", "f32", "rope_order", "exceeds the bound"),
                                       ("tiny-qwen2", "q8_0", "no_bias", "exceeds the bound"),
                                       ("small-llama", "q6_k", "rope_order", "argmax differs"),
                                       ("tiny-qwen2", "bf16", "f16_acts", "exceeds the bound 1e-04"),
                                       ("tiny-mixtral", "f32", "no_renorm", "exceeds the bound 1e-04")):
            rc, out = self.compare(arch, dtype, bug=bug)
            self.assertEqual(rc, 1, f"{arch} {dtype} {bug}: {out}")
            self.assertIn(text, out)
        rc, out = self.compare("tiny-llama", "q4_k", expect_type="q4_k")  # the fake falls back: rows of 64
        self.assertEqual(rc, 1, out)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        SHARED_MODELS = sys.argv.pop(1)
    unittest.main(verbosity=1)
