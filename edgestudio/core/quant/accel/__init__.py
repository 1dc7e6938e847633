"""The accelerated quantizer: onnxruntime's quantizers with their quadratic helpers replaced by
indexes, bounded-memory calibration, and 4-bit weight-only quantization one weight at a time.
Each writes the bytes stock onnxruntime writes (identity tests in ``tests/core/quant/accel/``)."""
