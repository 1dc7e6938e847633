"""Quantization: recipes (options and modes declared once), the quantize, int4 and analysis jobs,
runs, task detection and metrics, verdicts, auto-tune search, the calibration cache, and the
accelerated quantizer in :mod:`edgestudio.core.quant.accel`."""
