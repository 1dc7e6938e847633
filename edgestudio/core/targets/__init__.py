"""Targets: where a model will run (a phone's Qualcomm NPU, emulated here), which of its nodes
that accelerator takes and why not the others, in the accelerator's own words."""
