"""What jobs feed a model: the input specification derived from the graph and proven by a run,
data sources, calibration data, and the grammar of shapes and ranges."""
