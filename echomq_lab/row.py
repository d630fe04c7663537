"""A job row as the lab reads it: :class:`Row` wraps the bytes a ``HGETALL`` returns, answers
what every view asks of it (``state``, ``attempts`` as a number, ``payload``, the fields in
display order), and stays a read-only mapping of the raw bytes (``row[b"state"]``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Literal

FieldName = Literal["state", "attempts", "payload"]
#: The protocol fields of a row, in the order every view lists them; extra fields follow, sorted.
FIELD_NAMES: tuple[FieldName, ...] = ("state", "attempts", "payload")
_FIELD_KEYS = tuple(n.encode() for n in FIELD_NAMES)


def decoded(value: bytes) -> str:
    """The one display rule for a stored value: its text when it is UTF-8, else its bytes repr."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return repr(value)


def in_order(names: Iterable[bytes]) -> list[bytes]:
    """Field names in display order: the protocol fields first, then every other name sorted."""
    given = set(names)
    return [f for f in _FIELD_KEYS if f in given] + sorted(given.difference(_FIELD_KEYS))


class Row(Mapping[bytes, bytes]):
    """One job row. ``raw`` is exactly what the server holds (field bytes to value bytes); a row
    equals any mapping of the same bytes, and is not hashable."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[bytes, bytes]) -> None:
        self.raw: dict[bytes, bytes] = dict(raw)

    @classmethod
    def from_record(cls, raw: Mapping[bytes, bytes] | None) -> Row | None:
        """The row of a ``jobs.record`` reply; None (no row) stays None."""
        return None if raw is None else cls(raw)

    def __getitem__(self, key: bytes) -> bytes:
        return self.raw[key]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def __repr__(self) -> str:
        return f"Row({self.raw!r})"

    @property
    def state(self) -> str | None:
        """The ``state`` field as text (see :func:`decoded`), or None when the row has none."""
        return self.shown(b"state") if b"state" in self.raw else None

    @property
    def attempts(self) -> int | None:
        """``attempts`` as an int, or None when it is missing or not a plain integer."""
        try:
            return int(self.raw[b"attempts"])
        except (KeyError, ValueError):
            return None

    @property
    def payload(self) -> bytes | None:
        """The payload's exact bytes, or None when the row has no payload field."""
        return self.raw.get(b"payload")

    def field_order(self) -> list[bytes]:
        """The row's field names in display order: the protocol fields, then the rest sorted."""
        return in_order(self.raw)

    def shown(self, name: bytes, missing: str = "") -> str:
        """Field ``name``'s value by the one display rule; ``missing`` when the field is absent."""
        value = self.raw.get(name)
        return missing if value is None else decoded(value)
