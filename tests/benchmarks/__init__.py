"""Benchmarks for ``make bench`` (not collected by pytest): medians and ratios, side by side."""
