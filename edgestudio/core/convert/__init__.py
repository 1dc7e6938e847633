"""Opset and axis conversion planning."""
