"""Minimal safetensors reader/writer.

The `safetensors` package is not installed here, and the format is simple:
  u64 little-endian header length N | N bytes of JSON header | raw data.
The header maps tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}
(offsets relative to the start of the data area), plus an optional
"__metadata__" map of str -> str.  Only the dtypes nanotrain uses are supported.
"""
import json
import math
import struct

import numpy as np
import torch

# safetensors dtype code -> little-endian numpy dtype
_CODE_TO_NP = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
}
_NAME_TO_CODE = {"float32": "F32", "float64": "F64", "int32": "I32", "int64": "I64"}


def read_safetensors(path):
    """Return (dict name -> torch tensor, metadata dict). Raises ValueError on malformed files."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short to be a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} exceeds file size {len(raw)}")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: bad JSON header ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]

    tensors = {}
    for name, info in header.items():
        try:
            code, shape, (begin, end) = info["dtype"], info["shape"], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: malformed entry for '{name}'") from None
        if code not in _CODE_TO_NP:
            raise ValueError(f"{path}: tensor '{name}' has unsupported dtype {code}")
        dt = _CODE_TO_NP[code]
        count = math.prod(shape)
        if not (0 <= begin <= end <= len(data)) or end - begin != count * dt.itemsize:
            raise ValueError(f"{path}: tensor '{name}' has bad data_offsets {[begin, end]}")
        arr = np.frombuffer(data[begin:end], dtype=dt, count=count).reshape(shape)
        # Copy into native byte order so the tensor is writable and owns its memory.
        tensors[name] = torch.from_numpy(arr.astype(dt.newbyteorder("="), copy=True))
    return tensors, dict(metadata)


def write_safetensors(path, tensors, metadata=None):
    """Write dict name -> tensor (torch or numpy; float32/float64/int32/int64) to `path`."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        code = _NAME_TO_CODE.get(arr.dtype.name)
        if code is None:
            raise ValueError(f"tensor '{name}': unsupported dtype {arr.dtype}")
        blob = np.ascontiguousarray(arr, dtype=_CODE_TO_NP[code]).tobytes()
        header[name] = {"dtype": code, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("safetensors metadata must map str -> str")
        header["__metadata__"] = dict(metadata)

    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    head += b" " * (-len(head) % 8)  # keeps the data area 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)
