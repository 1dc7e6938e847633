"""The Qt application. The only package that imports PySide6 or pyqtgraph."""

import os

# pyqtgraph picks its Qt binding from the environment first; pin it to ours.
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")
