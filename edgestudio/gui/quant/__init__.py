"""Quantization views: the Quantization tab, the sensitivity ranking, the auto-tune window."""
