"""The window fixture of the GUI tests, for the real-model graph views."""

from tests.gui.conftest import window  # noqa: F401  (a fixture, used by name)
