"""Errors raised in worker processes (a process pool's build or plan) come
back whole: same type, message, arguments and attributes, although most
errors' __init__ take other arguments than their message."""

from __future__ import annotations

import inspect
import pickle

import pytest

import metadata.errors as errors

ERROR_TYPES = [cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.HudiBridgeError)]


@pytest.mark.parametrize("cls", ERROR_TYPES, ids=lambda cls: cls.__name__)
def test_every_error_survives_pickling(cls: type[errors.HudiBridgeError]) -> None:
    required = [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:] if p.default is p.empty
                and p.kind is p.POSITIONAL_OR_KEYWORD]
    error = cls(*[f"part{i}" for i in range(len(required) or 1)])  # (a message, where __init__ is Exception's)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls
    assert (str(again), again.args, again.__dict__) == (str(error), error.args, error.__dict__)


def test_a_format_error_keeps_where_it_happened() -> None:
    again = pickle.loads(pickle.dumps(errors.HudiFormatError("t/.hoodie/metadata/files/a.hfile", "bad block", offset=4096)))
    assert (again.path, again.problem, again.offset) == ("t/.hoodie/metadata/files/a.hfile", "bad block", 4096)
    assert str(again) == "t/.hoodie/metadata/files/a.hfile at offset 4096: bad block"
