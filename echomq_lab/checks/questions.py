"""The self-checks' words, read from ``questions.toml`` and joined to their observers.

:func:`build` reads the file shipped beside this module (or any other given to it), checks
every entry, and makes one :class:`~echomq_lab.checks.base.Check` per entry, in file order.
A mistake in the file is a :class:`QuestionsError` at import, one line naming the entry: an
unknown or missing field, a question whose observer does not exist, an observer no question
uses, parameters the observer does not take, or two choices waiting for the same outcome.
"""

from __future__ import annotations

import functools
import inspect
import tomllib
import typing
from collections.abc import Mapping
from importlib import resources
from typing import Any

from echomq_lab.checks.base import Check
from echomq_lab.checks.observers import Observer

#: The fields an entry may have; the first five it must have.
REQUIRED = ("key", "page", "question", "answers", "lesson")
OPTIONAL = ("observer", "params")


class QuestionsError(ValueError):
    """``questions.toml`` (or the text given to :func:`build`) does not describe valid checks."""


def shipped_text() -> str:
    """The text of the ``questions.toml`` shipped with the package."""
    return resources.files("echomq_lab.checks").joinpath("questions.toml").read_text("utf-8")


def _filled(where: str, text: Any, facts: Mapping[str, object]) -> str:
    """``text`` with its ``{name}`` fields filled from ``facts``."""
    if not isinstance(text, str) or not text.strip():
        raise QuestionsError(f"{where} must be some text, not {text!r}")
    try:
        return text.format_map(facts)
    except (KeyError, ValueError, IndexError) as exc:
        raise QuestionsError(f"{where}: cannot fill in {text!r} ({exc!r}); the facts are "
                             f"{', '.join(facts) or 'none'}") from None


def _answers(where: str, raw: Any, facts: Mapping[str, object]) -> tuple[tuple[str, ...],
                                                                          tuple[str, ...]]:
    """(choices, outcomes) of an entry's ``answers``: each ``{when = ..., text = ...}``."""
    if not isinstance(raw, list) or len(raw) < 2:
        raise QuestionsError(f"{where}: answers must list at least two choices")
    choices, outcomes = [], []
    for i, answer in enumerate(raw, start=1):
        if not isinstance(answer, dict) or set(answer) != {"when", "text"}:
            raise QuestionsError(f"{where}, answer {i}: give exactly when and text")
        if not isinstance(answer["when"], str) or answer["when"] in outcomes:
            raise QuestionsError(f"{where}, answer {i}: its when {answer['when']!r} must be a "
                                 "word no other choice of the question uses")
        choices.append(_filled(f"{where}, answer {i}", answer["text"], facts))
        outcomes.append(answer["when"])
    if len(set(choices)) < len(choices):
        raise QuestionsError(f"{where}: two choices read the same")
    return tuple(choices), tuple(outcomes)


def _bound(where: str, name: str, fn: Observer, params: Any) -> Observer:
    """``fn`` with ``params`` bound, once they are checked against its keyword arguments
    (a ``Literal`` annotation names the values allowed)."""
    if not isinstance(params, dict):
        raise QuestionsError(f"{where}: params must be a table, not {params!r}")
    try:
        inspect.signature(fn).bind(None, None, **params)
    except TypeError as exc:
        raise QuestionsError(f"{where}: observer {name} does not take these params: "
                             f"{exc}") from None
    hints = typing.get_type_hints(fn)
    for arg, value in params.items():
        allowed = typing.get_args(hints.get(arg))
        if typing.get_origin(hints.get(arg)) is typing.Literal and value not in allowed:
            raise QuestionsError(f"{where}: {arg} = {value!r} is not one of {allowed}")
    return functools.partial(fn, **params) if params else fn


def _check(entry: Any, observers: Mapping[str, Observer], facts: Mapping[str, object]) -> Check:
    """One entry of the file as a check."""
    if not isinstance(entry, dict):
        raise QuestionsError(f"every [[checks]] entry must be a table, not {entry!r}")
    where = f"check {entry.get('key', '(no key)')!r}"
    missing = [f for f in REQUIRED if f not in entry]
    unknown = sorted(set(entry) - {*REQUIRED, *OPTIONAL})
    if missing or unknown:
        raise QuestionsError(f"{where}: missing {missing or 'nothing'}, "
                             f"unknown {unknown or 'none'}")
    key, page = entry["key"], entry["page"]
    if not isinstance(key, str) or not key.isidentifier():
        raise QuestionsError(f"{where}: the key must be a Python-style name")
    if not isinstance(page, int) or isinstance(page, bool) or page < 0:
        raise QuestionsError(f"{where}: page must be a page number, not {page!r}")
    name = entry.get("observer", key)
    if name not in observers:
        raise QuestionsError(f"{where}: no observer called {name!r} (there are "
                             f"{', '.join(sorted(observers))})")
    choices, outcomes = _answers(where, entry["answers"], facts)
    return Check(key, page, _filled(f"{where}, question", entry["question"], facts), choices,
                 outcomes, _bound(where, name, observers[name], entry.get("params", {})),
                 _filled(f"{where}, lesson", entry["lesson"], facts))


def build(observers: Mapping[str, Observer], facts: Mapping[str, object],
          text: str | None = None) -> tuple[Check, ...]:
    """The checks ``text`` (default: the shipped ``questions.toml``) describes, in its order;
    QuestionsError naming the entry at the first mistake."""
    try:
        data = tomllib.loads(shipped_text() if text is None else text)
    except tomllib.TOMLDecodeError as exc:
        raise QuestionsError(f"questions.toml is not valid TOML: {exc}") from None
    if set(data) != {"checks"} or not isinstance(data["checks"], list):
        raise QuestionsError("questions.toml must hold [[checks]] entries and nothing else")
    made = tuple(_check(entry, observers, facts) for entry in data["checks"])
    keys = [c.key for c in made]
    doubled = sorted({k for k in keys if keys.count(k) > 1})
    if doubled:
        raise QuestionsError(f"two questions share the key {', '.join(doubled)}")
    used = {e.get("observer", e["key"]) for e in data["checks"]}
    idle = sorted(set(observers) - used)
    if idle:
        raise QuestionsError(f"no question uses the observer {', '.join(idle)}: add its "
                             "question to questions.toml or remove the observer")
    return made
