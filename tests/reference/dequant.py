"""Dequantizers for ggml tensor types, written from ggml's published block formats.

Every function takes the raw bytes of a whole tensor (np.uint8, length n_blocks * block_bytes)
and returns float64 values in storage order (ggml's row-major: shape[0] contiguous).

Block formats (all little endian, f16 = IEEE half):
  F32  : 4-byte floats.            F16: IEEE halves.      BF16: upper 16 bits of an f32.
  Q8_0 : 32 values in 34 bytes  = f16 d, int8 q[32];                        x = d * q
  Q4_0 : 32 values in 18 bytes  = f16 d, u8 qs[16]; value j < 16 is the low nibble of qs[j],
         value j + 16 the high nibble of qs[j];                             x = d * (nibble - 8)
  Q5_0 : 32 values in 22 bytes  = f16 d, u8 qh[4], u8 qs[16]; the low four bits of value j < 16
         are the low nibble of qs[j], of value j + 16 the high nibble of qs[j]; the fifth bit of
         value e is bit e of qh read as a little-endian u32;               x = d * (q - 16)
  Q4_K : 256 values in 144 bytes = f16 d, f16 dmin, u8 scales[12], u8 qs[128].
         Eight sub-blocks of 32 with a 6-bit scale sc[j] and 6-bit min m[j] packed in `scales`:
           j < 4 : sc = scales[j] & 63,  m = scales[j + 4] & 63
           j >= 4: sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4)
                   m  = (scales[j + 4] >> 4) | ((scales[j]     >> 6) << 4)
         The quants come in four 32-byte groups g: sub-block 2g is the low nibbles of
         qs[32g : 32g + 32], sub-block 2g + 1 the high nibbles.   x = d * sc * q - dmin * m
  Q6_K : 256 values in 210 bytes = u8 ql[128], u8 qh[64], int8 scales[16], f16 d.
         Two halves h of 128 values, each using ql[64h : 64h + 64], qh[32h : 32h + 32],
         scales[8h : 8h + 8]. Within a half, for l < 32 (qh byte b = qh[l]):
           value l      : low  nibble of ql[l]      | ((b >> 0) & 3) << 4
           value l + 32 : low  nibble of ql[l + 32] | ((b >> 2) & 3) << 4
           value l + 64 : high nibble of ql[l]      | ((b >> 4) & 3) << 4
           value l + 96 : high nibble of ql[l + 32] | ((b >> 6) & 3) << 4
         each minus 32; the 16-value group i of the half uses scales[8h + i].
                                                                            x = d * scale * q
"""

import numpy as np

QK8_0 = 32
QK4_0 = 32
QK_K = 256
BLOCK_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "Q8_0": 34, "Q4_0": 18, "Q5_0": 22, "Q4_K": 144, "Q6_K": 210}
BLOCK_ELEMS = {"F32": 1, "F16": 1, "BF16": 1, "Q8_0": 32, "Q4_0": 32, "Q5_0": 32, "Q4_K": 256, "Q6_K": 256}


def _blocks(raw, block_bytes, name):
    raw = np.asarray(raw, dtype=np.uint8)
    if raw.size % block_bytes != 0:
        raise ValueError(f"{name}: {raw.size} bytes is not a whole number of {block_bytes}-byte blocks")
    return raw.reshape(-1, block_bytes)


def _f16(b):
    """Little-endian f16 from a [..., 2] uint8 array, as float64."""
    return np.ascontiguousarray(b).view("<f2")[..., 0].astype(np.float64)


def deq_f32(raw):
    return np.asarray(raw, dtype=np.uint8).view("<f4").astype(np.float64)


def deq_f16(raw):
    return np.asarray(raw, dtype=np.uint8).view("<f2").astype(np.float64)


def deq_bf16(raw):
    u16 = np.asarray(raw, dtype=np.uint8).view("<u2").astype(np.uint32)
    return (u16 << 16).view(np.float32).astype(np.float64)


def deq_q8_0(raw):
    b = _blocks(raw, 34, "Q8_0")
    d = _f16(b[:, 0:2])
    q = b[:, 2:34].view(np.int8).astype(np.float64)
    return (d[:, None] * q).reshape(-1)


def deq_q4_0(raw):
    b = _blocks(raw, 18, "Q4_0")
    d = _f16(b[:, 0:2])
    qs = b[:, 2:18]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64) - 8.0
    return (d[:, None] * q).reshape(-1)


def deq_q5_0(raw):
    b = _blocks(raw, 22, "Q5_0")
    d = _f16(b[:, 0:2])
    qh = b[:, 2:6].astype(np.int64)
    bits = (qh[:, :, None] >> np.arange(8)) & 1          # [n][byte][bit]
    high = bits.reshape(-1, 32)                            # element e = byte e // 8, bit e % 8
    qs = b[:, 6:22]
    low = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)
    q = (low | (high << 4)).astype(np.float64) - 16.0
    return (d[:, None] * q).reshape(-1)


def q4_k_scale_min(scales):
    """[n, 12] packed bytes -> (sc [n, 8], m [n, 8]) 6-bit integers."""
    s = scales.astype(np.int64)
    sc = np.empty((s.shape[0], 8), dtype=np.int64)
    m = np.empty((s.shape[0], 8), dtype=np.int64)
    sc[:, 0:4] = s[:, 0:4] & 63
    m[:, 0:4] = s[:, 4:8] & 63
    sc[:, 4:8] = (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:8] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def deq_q4_k(raw):
    b = _blocks(raw, 144, "Q4_K")
    n = b.shape[0]
    d = _f16(b[:, 0:2])
    dmin = _f16(b[:, 2:4])
    sc, m = q4_k_scale_min(b[:, 4:16])
    qs = b[:, 16:144].reshape(n, 4, 32)
    q = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(n, 8, 32).astype(np.float64)  # [n][sub][32]
    y = d[:, None, None] * sc[:, :, None] * q - dmin[:, None, None] * m[:, :, None]
    return y.reshape(-1)


def deq_q6_k(raw):
    b = _blocks(raw, 210, "Q6_K")
    n = b.shape[0]
    ql = b[:, 0:128].reshape(n, 2, 64).astype(np.int64)
    qh = b[:, 128:192].reshape(n, 2, 32).astype(np.int64)
    scales = b[:, 192:208].view(np.int8).reshape(n, 2, 8).astype(np.float64)
    d = _f16(b[:, 208:210])
    lo, hi = ql[:, :, 0:32], ql[:, :, 32:64]
    q = np.empty((n, 2, 4, 32), dtype=np.int64)
    q[:, :, 0] = (lo & 15) | (((qh >> 0) & 3) << 4)
    q[:, :, 1] = (hi & 15) | (((qh >> 2) & 3) << 4)
    q[:, :, 2] = (lo >> 4) | (((qh >> 4) & 3) << 4)
    q[:, :, 3] = (hi >> 4) | (((qh >> 6) & 3) << 4)
    q = (q - 32).reshape(n, 2, 8, 16).astype(np.float64)  # 8 groups of 16 per half
    y = d[:, None, None, None] * scales[:, :, :, None] * q
    return y.reshape(-1)


DEQUANT = {
    "F32": deq_f32, "F16": deq_f16, "BF16": deq_bf16, "Q8_0": deq_q8_0,
    "Q4_0": deq_q4_0, "Q5_0": deq_q5_0, "Q4_K": deq_q4_k, "Q6_K": deq_q6_k,
}


def dequantize(type_name, raw):
    if type_name not in DEQUANT:
        raise ValueError(f"dequant: unsupported tensor type {type_name} (supported: {', '.join(DEQUANT)})")
    return DEQUANT[type_name](raw)


def tensor_to_numpy(t):
    """gguf_reader.TensorInfo -> float64 array in numpy shape (reverse of the ggml shape)."""
    return dequantize(t.type_name, t.data).reshape(t.np_shape)
