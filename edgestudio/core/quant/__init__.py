"""Quantization recipes, modes and runs."""
