"""The option classes of loads and saves (ParseOptions, SerializeOptions, ExternalDataOptions,
TensorBufferOptions) and the keyword arguments they become."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import typing
from typing import Any, Callable, TypeVar, cast

from onnxio import _onnxio
from onnxio._onnxio import *  # noqa: F401,F403  (the message classes and exceptions)

class _Options:
    """Shared behaviour of the option classes: keyword construction with
    checked names, equality, repr."""

    __slots__ = ()
    _defaults: dict = {}

    if typing.TYPE_CHECKING:
        # The option attributes are slots made at import from the library's
        # table (_TABLE below): to a type checker, any name, of any type.
        @typing.type_check_only
        def __getattr__(self, name: str) -> Any: ...

        @typing.type_check_only
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, **kwargs):
        for name, default in self._all_defaults().items():
            setattr(self, name, kwargs.pop(name, default))
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    @classmethod
    def _all_defaults(cls) -> dict:
        out: dict = {}
        for klass in reversed(cls.__mro__):
            out.update(klass.__dict__.get("_defaults", {}))
        return out

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._all_defaults())

    def __repr__(self):
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._all_defaults())
        return f"{type(self).__name__}({args})"


# src/options.def, the one home of the options: each class's attributes,
# their values that leave the library's defaults, and their docs.
_TABLE = _onnxio._options()
_CONSTANTS = _TABLE["constants"]


def _constant_text(value: int) -> str:
    return f"{value >> 20} MiB" if value >= 1 << 20 and value % (1 << 20) == 0 else str(value)


def _rows(struct: str, skip=()) -> list:
    """(member, default, doc) of the attributes of onnxio_<struct>_options
    that the package exposes, in the struct's order."""
    return [(member, ast.literal_eval(python), doc.format(**{k: _constant_text(v) for k, v in _CONSTANTS.items()}))
            for options, member, python, doc in _TABLE["options"]
            if options == struct and python is not None and member not in skip]


def _doc(intro: str, rows: list) -> str:
    width = 76
    parts = [intro, ""]
    for member, _, text in rows:
        parts.append(textwrap.fill(f"{member}: {text}", width, subsequent_indent="    "))
    return "\n".join(parts)


def _struct_doc(struct: str) -> str:
    return next(doc for name, _, doc in _TABLE["structs"] if name == struct)


_BUFFER_ROWS = _rows("consolidate")
_BUFFER = tuple(r[0] for r in _BUFFER_ROWS)
_PARSE_ROWS = _rows("parse", skip=_BUFFER)
_EXTERNAL_ROWS = _rows("external_data")
_SERIALIZE_ROWS = _rows("serialize", skip=_BUFFER)


class TensorBufferOptions(_Options):
    __doc__ = _doc(_struct_doc("consolidate"), _BUFFER_ROWS)
    __slots__ = tuple(r[0] for r in _BUFFER_ROWS)
    _defaults = {r[0]: r[1] for r in _BUFFER_ROWS}


class ParseOptions(TensorBufferOptions):
    __doc__ = _doc(_struct_doc("parse"), _PARSE_ROWS)
    __slots__ = tuple(r[0] for r in _PARSE_ROWS)
    _defaults = {r[0]: r[1] for r in _PARSE_ROWS}

    def _kwargs(self) -> dict:
        return {n: getattr(self, n) for n in self._all_defaults()}


class ExternalDataOptions(_Options):
    __doc__ = _doc(_struct_doc("external_data"), _EXTERNAL_ROWS)
    __slots__ = tuple(r[0] for r in _EXTERNAL_ROWS)
    _defaults = {r[0]: r[1] for r in _EXTERNAL_ROWS}


class SerializeOptions(TensorBufferOptions):
    __doc__ = _doc(_struct_doc("serialize"), _SERIALIZE_ROWS)
    __slots__ = tuple(r[0] for r in _SERIALIZE_ROWS)
    _defaults = {r[0]: r[1] for r in _SERIALIZE_ROWS}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.external_data is None:
            self.external_data = ExternalDataOptions()

    def _kwargs(self) -> dict:
        out = {n: getattr(self, n) for n in self._all_defaults() if n != "external_data"}
        ext = self.external_data or ExternalDataOptions()
        out.update({n: getattr(ext, n) for n in ExternalDataOptions._all_defaults()})
        return out


def _check_options(options, cls):
    if options is not None and not isinstance(options, cls):
        raise TypeError(f"options must be an onnxio.{cls.__name__} or None, not {type(options).__name__}")


def _parse_kwargs(options, explicit: dict) -> dict:
    """The C keyword arguments: `options` first, then every explicit
    keyword argument that differs from its default."""
    _check_options(options, ParseOptions)
    out = (options or ParseOptions())._kwargs()
    defaults = ParseOptions._all_defaults()
    for name, value in explicit.items():
        if value is not defaults[name] and value != defaults[name]:
            out[name] = value
    return out


_F = TypeVar("_F", bound=Callable[..., Any])


def _takes_options(cls, only=None) -> Callable[[_F], _F]:
    """Decorator: the function takes the attributes of the option class
    `cls` (those named in `only`, when given) as keyword-only arguments with
    the class's defaults, the ones a call passes arriving in its
    ``**explicit``; its signature shows them. The option list lives in
    src/options.def, not in each function."""
    defaults = cls._all_defaults()
    names = tuple(only) if only is not None else tuple(defaults)

    def decorate(fn: _F) -> _F:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if not params or params[-1].kind is not inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"{fn.__name__} must end with **explicit")
        own = params[:-1]
        accepted = frozenset(names) | {p.name for p in own}

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not accepted.issuperset(kwargs):
                bad = next(k for k in kwargs if k not in accepted)
                raise TypeError(f"{fn.__name__}() got an unexpected keyword argument {bad!r}")
            return fn(*args, **kwargs)

        # An option the function takes itself (load_model's positional
        # load_external_data, as onnx has it) stays the function's.
        generated = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=defaults[n]) for n in names
                     if n not in sig.parameters]
        wrapper.__signature__ = sig.replace(parameters=own + generated)  # type: ignore[attr-defined]
        return cast(_F, wrapper)

    return decorate
