"""Operations that enter native code (onnxruntime, checker, converters, torch).

Imported only by job workers and probe subprocesses, never by the GUI process.
"""
