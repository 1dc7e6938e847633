"""Where a job's outputs are written: a staging folder beside the target, moved into place only
when the job succeeded, so no half-written file is ever left where the user looks.

The folder's name carries the owner's pid: one whose owner is gone (a ``kill -9`` of a command
or of the window: nothing ran its clean-up) is known to be stale and removed by the next job
writing there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import psutil

from edgestudio.core.errors import EdgeStudioError
from edgestudio.core.job_api.recipe import Recipe
from edgestudio.core.job_api.report import JobReport


class OutputPathError(EdgeStudioError):
    """The output path is unusable: it exists, is the input, or its folder is not writable."""


def check_output(recipe: Recipe[Any]) -> Path | None:
    """Validate ``recipe.output`` before the job starts; return it as an absolute path.

    Raises
    ------
    OutputPathError
        When the output would replace an input, exists without ``overwrite``, or its folder is
        missing or not writable.
    """
    if not recipe.output:
        return None
    out = Path(recipe.output).absolute()
    for src in recipe.input_paths():
        if src and os.path.realpath(src) == os.path.realpath(out):
            raise OutputPathError(
                f"The output {out.name} is the input model: EdgeStudio never "
                "overwrites its input. Choose another file name."
            )
    if out.is_dir():
        raise OutputPathError(f"The output {out} is a folder; give a file name.")
    if out.exists() and not recipe.overwrite:
        raise OutputPathError(
            f"{out} already exists. Choose another name or allow overwriting (--overwrite)."
        )
    if not out.parent.is_dir():
        raise OutputPathError(f"The output folder {out.parent} does not exist.")
    if not os.access(out.parent, os.W_OK):
        raise OutputPathError(f"The output folder {out.parent} is not writable.")
    return out


def staging_folder(output: Path) -> Path:
    """A new staging folder beside ``output`` (stale ones there are removed first)."""
    remove_stale_staging(output.parent)
    return Path(
        tempfile.mkdtemp(
            prefix=f".{output.name}.edgestudio-{os.getpid()}-", suffix=".tmp", dir=output.parent
        )
    )


def publish(report: JobReport[Any], staging: Path, output: Path) -> None:
    """Move the files ``report`` names from ``staging`` into place: its companions first
    (external data), the model last, atomically each; ``report.output`` says where.

    Raises
    ------
    OutputPathError
        When the job wrote no output file.
    OSError
        When a file could not be moved.
    """
    main, *extra = report.files or [""]
    if not main:
        raise OutputPathError("The job succeeded but wrote no output file.")
    for name in extra:
        os.replace(staging / name, output.parent / name)
    os.replace(staging / main, output)
    report.output = str(output)


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the staging folders in ``folder`` that a killed EdgeStudio left behind (``kill
    -9`` of a command or the window: nothing ran its clean-up), i.e. those whose owning process
    is gone or started after the folder was made (its pid was reused); return them."""
    removed = []
    for staging in folder.glob(".*.edgestudio-*-*.tmp"):
        owner = staging.name.rsplit(".edgestudio-", 1)[-1].split("-", 1)[0]
        if not owner.isdigit() or not staging.is_dir():
            continue
        try:
            alive = psutil.Process(int(owner)).create_time() <= staging.stat().st_mtime + 1
        except psutil.AccessDenied:
            alive = True  # another user's live process
        except (psutil.NoSuchProcess, OSError):
            alive = False
        if not alive:
            shutil.rmtree(staging, ignore_errors=True)
            removed.append(staging)
    return removed
