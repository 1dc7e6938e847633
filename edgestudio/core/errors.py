"""User-facing error types: every message is written for a person, not a developer."""

from __future__ import annotations

import errno
import os


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


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def describe_exception(exc: BaseException, output_folder: str | None = None) -> str:
    """Say in a user's words why a job failed: out of memory, disk full, or the message itself.

    ``output_folder`` names where the job was writing; it is used when the exception has no file
    name, or names a file in our hidden staging folder the user has never heard of.
    """
    if isinstance(exc, MemoryError):
        return (
            "The job ran out of memory. Close other programs, use fewer calibration samples, "
            "or run it on a machine with more memory."
        )
    if isinstance(exc, OSError) and exc.errno in _DISK_FULL + _NOT_WRITABLE:
        where = output_folder or (os.path.dirname(str(exc.filename)) if exc.filename else None)
        place = f" in {where}" if where else ""
        if exc.errno in _DISK_FULL:
            return (
                f"The disk is full: there was no space left{place} to write the result. "
                "Free some space or choose another output folder. Nothing was written."
            )
        return (
            f"The result could not be written{place}: {exc.strerror}. Choose a folder you "
            "can write to. Nothing was written."
        )
    return str(exc) or type(exc).__name__
