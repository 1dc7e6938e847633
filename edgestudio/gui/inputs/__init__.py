"""The Inputs tab: the input specification every job feeds the model."""
