"""One declaration per recipe option: the CLI flag, its help, its choices, which modes use it.

A recipe field declared with :func:`option` is all a new option needs: the argparse option
(:func:`add_options`), the recipe built from parsed arguments (:func:`values_from_args`), the
equivalent command line (:func:`option_argv`) and the form's visibility rules all read it from
here, so the copies cannot disagree (a test round-trips every declared option through the CLI).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

FIELD_OPTION = "edgestudio_option"


@dataclass(frozen=True)
class Option:
    """How one recipe field appears on the command line and in forms.

    Parameters
    ----------
    flag
        The CLI flag (``--weight-type``). For a boolean that defaults to True, the flag turns it
        off (``--weight-asymmetric`` for ``weight_symmetric``).
    help
        One line for ``--help``; the default is appended by argparse.
    choices
        Allowed values, if the field is one of a set.
    modes
        The modes of the recipe that use the field (None: every mode).
    metavar
        The placeholder shown in ``--help`` for a value.
    label, group, placeholder, minimum, maximum
        How the form shows it: the row's label, the box it sits in, the hint in an empty text
        field, a number's bounds.
    ort
        The ``extra_options`` key onnxruntime's quantizer reads the value from, when the value
        goes there as is.
    parse, show
        For a value typed as text in a grammar of its own (``224x224``, ``0.5,0.5,0.5``,
        ``1/255``): the parser, raising ValueError with the form, and the text of a value; the
        command line and the form's text field both use them.
    always
        Spelled in the equivalent command even at its default, so that the command says it
        (a quantization's mode and types, a benchmark's run counts).
    requires
        ``(field, value)``: the option means something only when that other field of the
        recipe has that value (``--percentile`` needs ``--calib-method percentile``); given
        otherwise, the command line refuses it rather than ignore it.
    """

    flag: str
    help: str
    choices: tuple[str, ...] | None = None
    modes: tuple[str, ...] | None = None
    metavar: str | None = None
    label: str = ""
    group: str = ""
    placeholder: str = ""
    minimum: float | None = None
    maximum: float | None = None
    ort: str | None = None
    parse: Callable[[str], Any] | None = None
    show: Callable[[Any], str] | None = None
    always: bool = False
    requires: tuple[str, str] | None = None

    def used_in(self, mode: str) -> bool:
        """True when ``mode`` uses this field."""
        return self.modes is None or mode in self.modes


def option(
    default: Any,
    flag: str,
    help: str,
    choices: Sequence[str] | None = None,
    modes: Sequence[str] | None = None,
    **form: Any,
) -> Any:
    """A dataclass field with its :class:`Option` declaration (use as a field's default);
    ``form`` takes the other :class:`Option` fields (label, group, metavar, …)."""
    declared = Option(
        flag,
        help,
        tuple(choices) if choices else None,
        tuple(modes) if modes is not None else None,
        **form,
    )
    return dataclasses.field(default=default, metadata={FIELD_OPTION: declared})


def declared_options(cls: type) -> list[tuple[dataclasses.Field[Any], Option]]:
    """The fields of recipe class ``cls`` that carry an :class:`Option`, in declaration order."""
    return [
        (f, f.metadata[FIELD_OPTION]) for f in dataclasses.fields(cls) if FIELD_OPTION in f.metadata
    ]


def _dest(opt: Option) -> str:
    return opt.flag.lstrip("-").replace("-", "_")


def argument_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """A parser of the grammar for argparse, whose ValueError argparse shows after the flag's
    name (``argument --shape: …``)."""

    def read(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return read


def add_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    only: Callable[[Option], bool] = lambda opt: True,
) -> None:
    """Add an argparse option for every declared field of ``cls`` (that ``only`` keeps)."""
    for f, opt in declared_options(cls):
        if not only(opt):
            continue
        default = f.default
        modes = f" ({', '.join(opt.modes)})" if opt.modes else ""
        if opt.parse is not None:
            shown = opt.show(default) if opt.show and default is not None else "none"
            parser.add_argument(
                opt.flag,
                type=argument_type(opt.parse),
                default=default,
                dest=_dest(opt),
                metavar=opt.metavar,
                help=f"{opt.help}{modes} (default: {shown.replace('%', '%%')})",
            )
        elif isinstance(default, bool):
            parser.add_argument(
                opt.flag, action="store_true", dest=_dest(opt), help=f"{opt.help}{modes}"
            )
        elif isinstance(default, tuple):
            parser.add_argument(
                opt.flag,
                action="append",
                default=[],
                dest=_dest(opt),
                metavar=opt.metavar or "VALUE",
                help=f"{opt.help}{modes} (repeatable)",
            )
        else:
            shown = "%(default)s" if default != "" else (opt.placeholder or "none")
            parser.add_argument(
                opt.flag,
                type=type(default),
                default=default,
                choices=opt.choices,
                dest=_dest(opt),
                metavar=opt.metavar,
                help=f"{opt.help}{modes} (default: {shown})",
            )


def values_from_args(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The declared fields of ``cls`` as parsed by :func:`add_options` (SystemExit naming
    both flags when an option is given without the value it ``requires``)."""
    values: dict[str, Any] = {}
    for f, opt in declared_options(cls):
        given = getattr(args, _dest(opt))
        if opt.parse is not None:
            values[f.name] = given
        elif isinstance(f.default, bool):
            values[f.name] = (not given) if f.default else bool(given)
        elif isinstance(f.default, tuple):
            values[f.name] = tuple(given)
        else:
            values[f.name] = given
    _check_requires(cls, values)
    return values


def _check_requires(cls: type, values: dict[str, Any]) -> None:
    """Refuse an option given (not at its default) without the value it requires."""
    declared = {f.name: (f, opt) for f, opt in declared_options(cls)}
    for f, opt in declared.values():
        if opt.requires is None or values[f.name] == f.default:
            continue
        field_name, needed = opt.requires
        if values.get(field_name) != needed:
            other = declared[field_name][1].flag
            raise SystemExit(
                f"edgestudio: error: {opt.flag} applies only with {other} {needed} "
                f"(got {other} {values.get(field_name)})"
            )


def option_words(opt: Option, f: dataclasses.Field[Any], value: Any, mode: str | None) -> list[str]:
    """The CLI arguments of one declared field: none where ``mode`` does not use it or the
    value is its default (unless the option is always said)."""
    if mode is not None and not opt.used_in(mode):
        return []
    if value == f.default and not opt.always:
        return []
    if opt.show is not None:
        return [opt.flag, opt.show(value)]
    if isinstance(f.default, bool):
        return [opt.flag] if value != f.default else []
    if isinstance(f.default, tuple):
        return [word for item in value for word in (opt.flag, str(item))]
    return [opt.flag, repr(value) if isinstance(value, float) else str(value)]


def applies(opt: Option, recipe: Any) -> bool:
    """False for an option whose ``requires`` the recipe does not meet (a percentile with
    another calibration method): the equivalent command leaves it out."""
    return opt.requires is None or getattr(recipe, opt.requires[0]) == opt.requires[1]


def option_argv(recipe: Any, mode: str | None = None) -> list[str]:
    """The CLI arguments for ``recipe``'s declared fields that its ``mode`` uses (see
    :func:`option_words`)."""
    return [
        word
        for f, opt in declared_options(type(recipe))
        if applies(opt, recipe)
        for word in option_words(opt, f, getattr(recipe, f.name), mode)
    ]
