"""The model file: reading it safely, writing it atomically, its summary, graph IR and layout,
opsets, shape inference, the onnxruntime sessions jobs use, and the gate every written model
passes (loaded and run) before a job may succeed."""
