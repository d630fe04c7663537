"""What a benchmark results file must hold, read with one clear error for each hole.

``benchmarks/run.py`` writes its measurements as JSON. :func:`load` reads such a file into a
dict; :func:`value`, :func:`number` and :func:`section` read one entry of it, raising
:class:`ResultsInvalid` (one line naming the entry) when it is missing or of the wrong kind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Where the repository keeps the results ``python -m benchmarks.run`` writes, from its root.
REPOSITORY_FILE = Path("benchmarks") / "results.json"


class ResultsMissing(FileNotFoundError):
    """There is no results file where one was looked for."""


class ResultsInvalid(ValueError):
    """The results file is not JSON, or lacks something a report needs."""


def load(path: str | Path) -> dict[str, Any]:
    """The raw results at ``path``: ResultsMissing if there is no file, ResultsInvalid if it
    is not a JSON object."""
    where = Path(path)
    if not where.is_file():
        raise ResultsMissing(
            f"no benchmark results at {where}: run `python -m benchmarks.run` in the "
            "repository to measure them"
        )
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsInvalid(f"{where} is not a JSON results file: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsInvalid(f"{where} holds a JSON {type(data).__name__}, not an object")
    return data


def value(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``data[key]`` when it is of ``kind`` (a bool never counts as a number); ResultsInvalid
    naming ``where + key`` otherwise."""
    if not isinstance(data, Mapping) or key not in data:
        raise ResultsInvalid(f"the results lack {where}{key}")
    found = data[key]
    if not isinstance(found, kind) or isinstance(found, bool) and kind is not bool:
        raise ResultsInvalid(f"{where}{key} should be {_kind_name(kind)}, not {found!r}")
    return found


def section(results: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``results[key]`` when it is an object, ``{}`` when absent; ResultsInvalid otherwise."""
    found = results.get(key, {})
    if not isinstance(found, Mapping):
        raise ResultsInvalid(f"{key} should be an object, not {found!r}")
    return found


def number(data: Mapping[str, Any], key: str, where: str) -> float:
    """``data[key]`` as a finite float; ResultsInvalid naming ``where + key`` otherwise."""
    found = float(value(data, key, (int, float), where))
    if not math.isfinite(found):
        raise ResultsInvalid(f"{where}{key} should be a finite number, not {found!r}")
    return found


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)
