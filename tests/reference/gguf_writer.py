"""A tiny GGUF writer, used only by the reference's self-tests to produce files with known content
(every metadata type, nested arrays, chosen alignment and version) for gguf_reader.py to parse.

    write_gguf(path, metadata, tensors, version=3, alignment=None)
      metadata: list of (key, value_type, value); an ARRAY value is (elem_type, [items]), and an
                item of an ARRAY-of-ARRAY is again (elem_type, [items]).
      tensors : list of (name, ggml_shape, type_name, raw_bytes); ggml_shape[0] is contiguous.
"""

import os
import struct

import numpy as np

from gguf_reader import (ARRAY, BOOL, FLOAT32, FLOAT64, GGML_TYPE_IDS, INT8, INT16, INT32, INT64, STRING,
                         UINT8, UINT16, UINT32, UINT64)

_FMT = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
        BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, v):
    if vtype == STRING:
        return _string(v)
    if vtype == ARRAY:
        etype, items = v
        return struct.pack("<IQ", etype, len(items)) + b"".join(_value(etype, it) for it in items)
    return struct.pack(_FMT[vtype], v)


def write_gguf(path, metadata, tensors, version=3, alignment=None):
    align = alignment if alignment is not None else 32
    kvs = list(metadata)
    if alignment is not None:
        kvs.append(("general.alignment", UINT32, alignment))
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for key, vtype, v in kvs:
        out += _string(key) + struct.pack("<I", vtype) + _value(vtype, v)
    offset = 0
    blobs = []
    for name, shape, tname, raw in tensors:
        raw = bytes(np.asarray(raw, dtype=np.uint8).tobytes()) if not isinstance(raw, bytes) else raw
        out += _string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
        out += struct.pack("<IQ", GGML_TYPE_IDS[tname], offset)
        blobs.append((offset, raw))
        offset += (len(raw) + align - 1) // align * align
    data_start = (len(out) + align - 1) // align * align
    out += b"\0" * (data_start - len(out))
    for off, raw in blobs:
        out += b"\0" * (data_start + off - len(out)) + raw
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)
