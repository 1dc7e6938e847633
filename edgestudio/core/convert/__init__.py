"""Converting a model: opset and axis conversion (plan, job, output shapes) and PyTorch export."""
