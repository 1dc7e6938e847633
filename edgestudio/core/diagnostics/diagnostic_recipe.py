"""The self-test's job recipe: a purpose-made job that ends in the outcome it is asked for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from edgestudio.core.job_api.command import positional, spelled
from edgestudio.core.job_api.recipe import Recipe

ACTIONS = (
    "succeed",
    "fail",
    "crash",
    "hang",
    "spawn",
    "spawn-stubborn",
    "noise",
    "spin",
    "partial",
    "hog",
)


@dataclass(frozen=True)
class DiagnosticRecipe(Recipe[None]):
    """A purpose-made job that exercises the job system (``edgestudio diagnostic``).

    ``action``: ``succeed`` (writes ``output``), ``fail`` (raises), ``crash`` (segfaults),
    ``hang`` (sleeps forever), ``spawn`` (starts a sleeping child process, then hangs),
    ``noise`` (writes garbage to fd 1, then succeeds), ``spin`` (burns CPU for ``seconds``),
    ``partial`` (writes half an output, then crashes), ``hog`` (allocates memory until it runs
    out: within a ``megabytes`` address-space limit when given, else up to 1 GiB, then waits to
    be killed).
    """

    kind: ClassVar[str] = "diagnostic"
    action: str = positional("succeed", choices=ACTIONS, help="what the job does")
    seconds: float = spelled(
        1.0, "--seconds", always=True, help="how long 'spin' runs (default %(default)s)"
    )
    megabytes: int = spelled(0, "--megabytes", help="memory limit of 'hog' (MB)")

    def title(self) -> str:
        """Name the action."""
        return f"Self-test: {self.action}"
