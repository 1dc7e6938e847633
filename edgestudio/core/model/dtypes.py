"""Names and sizes of ONNX element types, without loading any tensor data."""

from __future__ import annotations

from onnx import TensorProto

_NUMPY_STYLE = {"FLOAT": "float32", "DOUBLE": "float64"}

# Storage bits per element; strings have no fixed size.
_BITS = {
    "FLOAT": 32,
    "UINT8": 8,
    "INT8": 8,
    "UINT16": 16,
    "INT16": 16,
    "INT32": 32,
    "INT64": 64,
    "BOOL": 8,
    "FLOAT16": 16,
    "DOUBLE": 64,
    "UINT32": 32,
    "UINT64": 64,
    "COMPLEX64": 64,
    "COMPLEX128": 128,
    "BFLOAT16": 16,
    "FLOAT8E4M3FN": 8,
    "FLOAT8E4M3FNUZ": 8,
    "FLOAT8E5M2": 8,
    "FLOAT8E5M2FNUZ": 8,
    "UINT4": 4,
    "INT4": 4,
    "FLOAT4E2M1": 4,
    "FLOAT8E8M0": 8,
    "UINT2": 2,
    "INT2": 2,
}


def dtype_name(elem_type: int) -> str:
    """Return a readable name for an ONNX element type (``1`` -> ``"float32"``)."""
    try:
        onnx_name = str(TensorProto.DataType.Name(elem_type))
    except ValueError:
        return f"unknown({elem_type})"
    return _NUMPY_STYLE.get(onnx_name, onnx_name.lower())


def dtype_bits(elem_type: int) -> int | None:
    """Return the storage size of one element in bits, or None for strings and unknown types."""
    try:
        return _BITS.get(TensorProto.DataType.Name(elem_type))
    except ValueError:
        return None
