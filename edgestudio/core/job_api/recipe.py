"""What every job recipe is: plain typed data the GUI's forms edit and the CLI parses.

A recipe is rebuilt in the worker by :func:`~edgestudio.jobs.kinds.recipe_from_dict`.
Each recipe knows the ``edgestudio`` command line that runs the same job (``to_command``), which
the Jobs panel offers as "Copy equivalent command"."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from edgestudio.core.job_api.command import command_argv, spelled
from edgestudio.core.serialise import from_json, register_format, without

R = TypeVar("R")  # what a job of a recipe's kind returns (None: only its files and check)


@dataclass(frozen=True)
class Tolerance:
    """Numeric agreement required between a result and its original (``np.allclose``)."""

    atol: float = 1e-4
    rtol: float = 1e-3


def tolerance_words(tolerance: Tolerance) -> list[str]:
    """``--atol A --rtol R``: a tolerance as the command line gives it."""
    return ["--atol", repr(tolerance.atol), "--rtol", repr(tolerance.rtol)]


def tolerance_field(atol: float = Tolerance.atol, rtol: float = Tolerance.rtol) -> Any:
    """The field of a job's check tolerance (said as ``--atol``/``--rtol`` when not these)."""
    return spelled(default_factory=lambda: Tolerance(atol, rtol), show=tolerance_words)


@dataclass(frozen=True)
class Recipe(Generic[R]):
    """Base of every job recipe, generic in its job's result (``QuantRecipe`` is a
    ``Recipe[Quantization]``): a job submitted with it is a ``Job[R]`` whose report's ``result``
    is an ``R``. ``output`` is where the result goes (None: no file)."""

    kind: ClassVar[str] = ""
    # A job that measures time (a benchmark, a profile) runs alone: nothing starts beside it.
    runs_alone: ClassVar[bool] = False
    # The equivalent command's subcommand (default: the kind), and words said after its
    # positionals (inspect's --shapes --json).
    command: ClassVar[tuple[str, ...]] = ()
    command_flags: ClassVar[tuple[str, ...]] = ()
    output: str | None = spelled(None, "-o")
    overwrite: bool = spelled(False, "--overwrite")

    def title(self) -> str:
        """A short label for the Jobs panel."""
        return self.kind

    def input_paths(self) -> list[str]:
        """Files the job reads (they are never written)."""
        return []

    def options_mode(self) -> str | None:
        """The mode whose options the command says (None: the recipe has no modes)."""
        return None

    def to_command(self) -> list[str]:
        """Return the ``edgestudio …`` argv that runs the same job, derived from the fields'
        declarations (:mod:`edgestudio.core.job_api.command`)."""
        words = self.command or (self.kind,)
        return ["edgestudio", *words, *command_argv(self, self.options_mode(), self.command_flags)]

    @classmethod
    def result_type(cls) -> type[R]:
        """The class of ``R``, the result a job of this kind returns (``NoneType``: nothing
        beyond its files and check). A method, not a class attribute: the result's module is
        imported when a result is read, so that parsing a command line loads no analysis code.
        A test holds it to the recipe's ``Recipe[R]`` and to its operation's annotations."""
        return type(None)  # type: ignore[return-value]  # overridden by every kind with a result

    def read_result(self, data: Any) -> R:
        """The typed result of a job of this recipe from its JSON (what the worker sent).
        Called once, where the runner receives the report; a result missing or of another
        shape is a ValueError there (the job fails), never a surprise for its readers."""
        result_type = self.result_type()
        if data is None and result_type is not type(None):
            raise ValueError(f"a {self.kind} job returned no {result_type.__name__}")
        return from_json(result_type, data)

    def command_line(self) -> str:
        """Return :meth:`to_command` as one shell-quoted line."""
        return shlex.join(self.to_command())


# A recipe's JSON carries its kind, which says which class reads it back
# (:func:`edgestudio.jobs.kinds.recipe_from_dict`).
register_format(
    Recipe, lambda recipe, data: {"kind": recipe.kind, **data}, without("kind"), subclasses=True
)
