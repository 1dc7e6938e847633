"""The model file: reading it safely, its summary, graph IR and layout, opsets."""
