"""What jobs feed a model: the input specification, data sources, calibration data."""
