"""User-facing error types: every message is written for a person, not a developer."""

from __future__ import annotations


class EdgeStudioError(Exception):
    """Base class for errors whose message can be shown to the user as is."""


class ModelLoadError(EdgeStudioError):
    """A file could not be opened as an ONNX model.

    Parameters
    ----------
    message
        One sentence (or two) saying what is wrong, in a user's words.
    kind
        A stable classification for tests and reports, e.g. ``"empty"``, ``"not_protobuf"``.
    """

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
