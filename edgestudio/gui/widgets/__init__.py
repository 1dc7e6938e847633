"""Widgets every view shares: plots, tables, exporting a widget as a picture."""
