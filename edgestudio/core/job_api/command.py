"""The equivalent ``edgestudio`` command of a recipe, derived from its field declarations.

A field declared with :func:`~edgestudio.core.job_api.options.option` is spelled as its option
(it also makes the parser's flag and the form's widget). The others that the command line says
are declared here, beside the field: a :func:`positional` (the model, the models), or a field
:func:`spelled` with a flag and, for a value with a grammar of its own, how it is shown. Every
other field is the app's own business and not spelled. The subcommand's parser reads the
command back; ``tests/cli/test_recipe_round_trip.py`` holds every kind to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from edgestudio.core.job_api.options import FIELD_OPTION, applies, option_words

FIELD_SPELLING = "edgestudio_spelling"


@dataclass(frozen=True)
class Spelling:
    """How a field that is not an option appears in the equivalent command.

    Parameters
    ----------
    flag
        The flag before its value (``--shape``); a boolean field is the flag alone when true.
        None: a positional, or a value whose ``show`` gives its whole words (``--atol A --rtol
        R``).
    positional
        Said before every flag, in declaration order.
    show
        The value's words (a string or a list of them); by default its text.
    each
        A tuple whose items are said one by one, the flag repeated before each.
    always
        Said even at its default (a positional always is).
    modes
        The recipe modes that use the field (None: every mode).
    help, parse, metavar, choices, optional
        How the subcommand parses it (:mod:`edgestudio.core.job_api.arguments`): its help line
        (none: the subcommand reads it some other way), the parser of a value in a grammar of
        its own (raising ValueError), the placeholder in ``--help``, the allowed values, and
        for a positional whether it may be left out (``each``: zero or more).
    """

    flag: str | None = None
    positional: bool = False
    show: Callable[[Any], str | Sequence[str]] | None = None
    each: bool = False
    always: bool = False
    modes: tuple[str, ...] | None = None
    help: str = ""
    parse: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    optional: bool = False

    def words(self, value: Any) -> list[str]:
        """The field's words for ``value``."""
        if isinstance(value, bool):
            return [self.flag] if value and self.flag else []
        said: list[str] = []
        for item in value if self.each else (value,):
            shown = self.show(item) if self.show is not None else _text(item)
            said += [self.flag] if self.flag else []
            said += [shown] if isinstance(shown, str) else list(shown)
        return said


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def positional(
    default: Any = "",
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    **spelling: Any,
) -> Any:
    """A dataclass field said as a positional argument (a tuple: each item, with ``each``)."""
    if default_factory is not dataclasses.MISSING:
        default = dataclasses.MISSING
    return spelled(default, default_factory=default_factory, positional=True, **spelling)


def spelled(
    default: Any = dataclasses.MISSING,
    flag: str | None = None,
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    **spelling: Any,
) -> Any:
    """A dataclass field said with ``flag`` where it differs from its default (see
    :class:`Spelling` for ``show``, ``each``, ``always`` and ``modes``)."""
    return dataclasses.field(
        default=default,
        default_factory=default_factory,
        metadata={FIELD_SPELLING: Spelling(flag, **spelling)},
    )


def given_shapes() -> Any:
    """The field of a job's input shapes the user gave: ``--shape NAME=DIMxDIM``, repeated."""
    return spelled((), "--shape", each=True)


def given_ranges() -> Any:
    """The field of a job's input ranges the user gave: ``--range NAME=LOW:HIGH``, repeated."""
    return spelled((), "--range", each=True)


def given_data(**spelling: Any) -> Any:
    """The field of a job's real data: ``--data PATH`` and the options that prepare it (None
    unless a ``default_factory`` is given)."""
    default = dataclasses.MISSING if "default_factory" in spelling else None
    return spelled(default, "--data", show=lambda data: data.to_cli(), **spelling)


def field_default(f: dataclasses.Field[Any]) -> Any:
    """``f``'s default (made by its factory); ``dataclasses.MISSING`` when it has none."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def command_argv(
    recipe: Any, mode: str | None = None, after_positionals: Sequence[str] = ()
) -> list[str]:
    """The arguments of ``recipe``'s equivalent command: its positionals, ``after_positionals``,
    then every spelled field and option that its ``mode`` uses and whose value is not its
    default (nor None), in declaration order."""
    positionals: list[str] = []
    flags: list[str] = []
    for f in dataclasses.fields(recipe):
        value = getattr(recipe, f.name)
        opt = f.metadata.get(FIELD_OPTION)
        if opt is not None:
            flags += option_words(opt, f, value, mode) if applies(opt, recipe) else []
            continue
        spelling: Spelling | None = f.metadata.get(FIELD_SPELLING)
        if spelling is None:
            continue
        if spelling.positional:
            positionals += spelling.words(value)
        elif (
            value is not None
            and (spelling.always or value != field_default(f))
            and (mode is None or spelling.modes is None or mode in spelling.modes)
        ):
            flags += spelling.words(value)
    return [*positionals, *after_positionals, *flags]
