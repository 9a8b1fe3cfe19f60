"""A small, independent GGUF (v2/v3) reader for the numpy reference.

Written from the GGUF specification (ggml docs/gguf.md), not from duet's C++ reader:

    header   : magic "GGUF", u32 version, u64 tensor_count, u64 kv_count   (all little endian)
    kv       : string key, u32 value_type, value
    string   : u64 byte length + UTF-8 bytes (no terminator)
    array    : u32 element type, u64 count, count values (arrays may nest)
    tensor   : string name, u32 n_dims, u64 dims[n_dims] (dims[0] is contiguous), u32 ggml type,
               u64 offset relative to the start of the data section
    data     : starts at the first multiple of general.alignment (default 32) after the infos;
               every tensor offset is a multiple of that alignment.

Tensor bytes are exposed as numpy views of a read-only memory map (no copy). Any violation of
the format raises GgufError naming the file and the problem.
"""

import mmap
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
_SCALAR_FMT = {
    UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
    FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d",
}
_SCALAR_NP = {
    UINT8: "<u1", INT8: "<i1", UINT16: "<u2", INT16: "<i2", UINT32: "<u4", INT32: "<i4",
    FLOAT32: "<f4", UINT64: "<u8", INT64: "<i8", FLOAT64: "<f8",
}
TYPE_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
              "array", "uint64", "int64", "float64"]

# ggml tensor types: id -> (name, elements per block, bytes per block).
GGML_TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 30: ("BF16", 1, 2),
}
GGML_TYPE_IDS = {name: tid for tid, (name, _, _) in GGML_TYPES.items()}


class GgufError(Exception):
    pass


class TensorInfo:
    """One tensor: shape in ggml order (shape[0] contiguous), type name, raw bytes."""

    def __init__(self, name, shape, type_id, offset):
        self.name = name
        self.shape = tuple(shape)
        self.type_id = type_id
        self.type_name, self.block_elems, self.block_bytes = GGML_TYPES[type_id]
        self.offset = offset
        self.n_elements = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        self.n_bytes = self.n_elements // self.block_elems * self.block_bytes
        self.data = None  # np.uint8 view into the mapping, set by GgufFile

    @property
    def np_shape(self):
        """numpy (row-major) shape: the reverse of the ggml shape."""
        return tuple(reversed(self.shape))


class _Cursor:
    def __init__(self, buf, path):
        self.buf = buf
        self.pos = 0
        self.path = path

    def need(self, n, what):
        if n < 0 or self.pos + n > len(self.buf):
            raise GgufError(f"{self.path}: truncated file while reading {what} at byte {self.pos} "
                            f"(needs {n} bytes, file has {len(self.buf)})")

    def scalar(self, vtype, what):
        fmt = _SCALAR_FMT[vtype]
        size = struct.calcsize(fmt)
        self.need(size, what)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return v

    def string(self, what):
        n = self.scalar(UINT64, what + " length")
        self.need(n, what)
        raw = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise GgufError(f"{self.path}: {what} is not valid UTF-8") from None

    def value(self, vtype, what, depth=0):
        if vtype == STRING:
            return self.string(what)
        if vtype == ARRAY:
            if depth > 8:
                raise GgufError(f"{self.path}: {what}: arrays nested deeper than 8 levels")
            etype = self.scalar(UINT32, what + " array type")
            count = self.scalar(UINT64, what + " array count")
            if etype not in _SCALAR_FMT and etype not in (STRING, ARRAY):
                raise GgufError(f"{self.path}: {what}: unknown array element type {etype}")
            if etype in _SCALAR_NP:
                # Fast path: a numeric array is one contiguous little-endian run.
                size = np.dtype(_SCALAR_NP[etype]).itemsize
                self.need(count * size, what)
                arr = np.frombuffer(self.buf, dtype=_SCALAR_NP[etype], count=count, offset=self.pos)
                self.pos += count * size
                return GgufArray(etype, arr.tolist())
            if etype == BOOL:
                self.need(count, what)
                items = [b != 0 for b in bytes(self.buf[self.pos:self.pos + count])]
                self.pos += count
                return GgufArray(etype, items)
            # Each element needs at least 8 bytes (a string length / array header), so a count
            # larger than the remaining file is rejected before any allocation.
            self.need(count * 8 if etype == STRING else count * 12, what)
            return GgufArray(etype, [self.value(etype, f"{what}[{i}]", depth + 1) for i in range(count)])
        if vtype not in _SCALAR_FMT:
            raise GgufError(f"{self.path}: {what}: unknown value type {vtype} (allowed 0..12)")
        return self.scalar(vtype, what)


class GgufArray(list):
    """A metadata array: a list that also remembers the element type."""

    def __init__(self, elem_type, items):
        super().__init__(items)
        self.elem_type = elem_type


class GgufFile:
    """Parsed GGUF file. `metadata` maps key -> value (python scalars, str, GgufArray);
    `types` maps key -> value type; `tensors` maps name -> TensorInfo in file order."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            try:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # empty file cannot be mapped
                raise GgufError(f"{path}: truncated file (0 bytes)") from None
        buf = memoryview(self._map)
        cur = _Cursor(buf, path)
        cur.need(4, "magic")
        if bytes(buf[0:4]) != GGUF_MAGIC:
            raise GgufError(f"{path}: bad magic {bytes(buf[0:4])!r} (expected b'GGUF')")
        cur.pos = 4
        self.version = cur.scalar(UINT32, "version")
        if self.version not in (2, 3):
            raise GgufError(f"{path}: unsupported GGUF version {self.version} (supported: 2, 3)")
        n_tensors = cur.scalar(UINT64, "tensor count")
        n_kv = cur.scalar(UINT64, "metadata count")
        # Every kv needs >= 12 bytes and every tensor info >= 24: reject absurd counts early.
        cur.need(n_kv * 12 + n_tensors * 24, "header counts")

        self.metadata = {}
        self.types = {}
        for i in range(n_kv):
            key = cur.string(f"metadata key #{i}")
            vtype = cur.scalar(UINT32, f"type of '{key}'")
            self.metadata[key] = cur.value(vtype, f"metadata '{key}'")
            self.types[key] = vtype

        self.alignment = DEFAULT_ALIGNMENT
        if "general.alignment" in self.metadata:
            a = self.metadata["general.alignment"]
            if self.types["general.alignment"] != UINT32 or a == 0 or (a & (a - 1)) != 0:
                raise GgufError(f"{path}: general.alignment must be a power-of-two uint32, got {a!r}")
            self.alignment = a

        self.tensors = {}
        for i in range(n_tensors):
            name = cur.string(f"tensor #{i} name")
            n_dims = cur.scalar(UINT32, f"tensor '{name}' n_dims")
            if n_dims > 4:
                raise GgufError(f"{path}: tensor '{name}' has {n_dims} dims (at most 4)")
            shape = [cur.scalar(UINT64, f"tensor '{name}' dim") for _ in range(n_dims)]
            type_id = cur.scalar(UINT32, f"tensor '{name}' type")
            offset = cur.scalar(UINT64, f"tensor '{name}' offset")
            if type_id not in GGML_TYPES:
                raise GgufError(f"{path}: tensor '{name}' has unknown ggml type {type_id}")
            if name in self.tensors:
                raise GgufError(f"{path}: duplicate tensor name '{name}'")
            if any(d == 0 for d in shape) or any(d > (1 << 40) for d in shape):
                raise GgufError(f"{path}: tensor '{name}' has a bad shape {shape}")
            t = TensorInfo(name, shape, type_id, offset)
            if shape and shape[0] % t.block_elems != 0:
                raise GgufError(f"{path}: tensor '{name}' row of {shape[0]} elements is not a multiple "
                                f"of the {t.type_name} block size {t.block_elems}")
            if offset % self.alignment != 0:
                raise GgufError(f"{path}: tensor '{name}' offset {offset} is not a multiple of the "
                                f"alignment {self.alignment}")
            self.tensors[name] = t

        self.data_offset = (cur.pos + self.alignment - 1) // self.alignment * self.alignment
        for t in self.tensors.values():
            start = self.data_offset + t.offset
            if start + t.n_bytes > len(buf):
                raise GgufError(f"{path}: tensor '{t.name}' data [{start}, {start + t.n_bytes}) lies outside "
                                f"the file ({len(buf)} bytes)")
            t.data = np.frombuffer(self._map, dtype=np.uint8, count=t.n_bytes, offset=start)

    # Typed metadata access -------------------------------------------------
    def get(self, key, default=None):
        return self.metadata.get(key, default)

    def require(self, key):
        if key not in self.metadata:
            raise GgufError(f"{self.path}: metadata key '{key}' is missing")
        return self.metadata[key]

    def tensor(self, name):
        if name not in self.tensors:
            raise GgufError(f"{self.path}: tensor '{name}' is missing")
        return self.tensors[name]


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description="Dump a GGUF file's metadata and tensor infos.")
    ap.add_argument("file")
    args = ap.parse_args(argv)
    g = GgufFile(args.file)
    print(f"GGUF v{g.version}, alignment {g.alignment}, data at {g.data_offset}")
    for k, v in g.metadata.items():
        s = repr(v)
        if isinstance(v, GgufArray):
            s = f"[{TYPE_NAMES[v.elem_type]} x {len(v)}] " + repr(list(v[:8]))[:-1] + (", ...]" if len(v) > 8 else "]")
        print(f"  {k} ({TYPE_NAMES[g.types[k]]}) = {s[:200]}")
    for t in g.tensors.values():
        print(f"  {t.name}: {t.type_name} {list(t.shape)} @ {t.offset}")


if __name__ == "__main__":
    main()
