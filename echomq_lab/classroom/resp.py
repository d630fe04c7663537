"""The server's protocol (RESP2, and RESP3's replies), read a piece at a time, as the room's
gateway needs it: a learner's requests (arrays of bulk strings, each at most a given size) and
the server's replies (one whole reply at a time, its bytes kept to pass on untouched).

May import nothing of the package."""

from __future__ import annotations

from dataclasses import dataclass

CRLF = b"\r\n"
#: The most parts a request may have (a script's keys and arguments are a few).
MAX_PARTS = 64


class TooLarge(ValueError):
    """A request larger than the room takes; ``str()`` names the limit."""


class Malformed(ValueError):
    """Bytes that are not the server's protocol."""


def command(*words: str | bytes | int) -> bytes:
    """``words`` as one RESP request."""
    out = [b"*%d\r\n" % len(words)]
    for word in words:
        data = word if isinstance(word, bytes) else str(word).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def error(line: str) -> bytes:
    """``line`` as one RESP error reply (one line, whatever it held)."""
    return b"-" + " ".join(line.split()).encode("utf-8", "replace") + CRLF


class Requests:
    """Requests parsed from bytes as they come: :meth:`feed` returns the whole ones; a request
    (or a line) longer than ``limit`` bytes raises :class:`TooLarge`, bytes that are not a
    request :class:`Malformed`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[list[bytes]]:
        self._buf += data
        out: list[list[bytes]] = []
        while self._buf:
            parsed = self._one()
            if parsed is None:
                if len(self._buf) > self.limit:
                    raise TooLarge(self._too_large())
                break
            words, used = parsed
            del self._buf[:used]
            out.append(words)
        return out

    def _too_large(self) -> str:
        return f"request too large: this room takes at most {self.limit} bytes per request"

    def _one(self) -> tuple[list[bytes], int] | None:
        buf = self._buf
        if buf[:1] != b"*":
            raise Malformed("a request is an array of bulk strings (inline commands are not taken)")
        end = buf.find(CRLF)
        if end < 0:
            return None
        count = _number(buf[1:end])
        if not 1 <= count <= MAX_PARTS:
            raise Malformed(f"a request has 1 to {MAX_PARTS} parts")
        at, words = end + 2, []
        for _ in range(count):
            end = buf.find(CRLF, at)
            if end < 0:
                return None
            if buf[at:at + 1] != b"$":
                raise Malformed("each part of a request is a bulk string")
            size = _number(buf[at + 1:end])
            if size < 0:
                raise Malformed("a part of a request has no length")
            if size > self.limit or end + 2 + size > self.limit:
                raise TooLarge(self._too_large())
            start = end + 2
            if len(buf) < start + size + 2:
                return None
            words.append(bytes(buf[start:start + size]))
            at = start + size + 2
        return words, at


def _number(raw: bytes | bytearray) -> int:
    try:
        return int(raw)
    except ValueError:
        raise Malformed("a length that is not a number") from None


@dataclass(frozen=True)
class Reply:
    """One reply: its bytes as the server sent them, and its value (bytes for a string, int,
    None, a list, or an :class:`Err`)."""

    raw: bytes
    value: object


@dataclass(frozen=True)
class Err:
    """An error reply's line."""

    line: str

    @property
    def kind(self) -> str:
        """The first word: ``EMQSTALE``, ``NOPERM``, ``ERR``..."""
        return self.line.split(" ", 1)[0]


class Replies:
    """Replies parsed from the server's bytes as they come; :meth:`feed` returns whole ones."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Reply]:
        self._buf += data
        out: list[Reply] = []
        while self._buf:
            parsed = self._value(0)
            if parsed is None:
                break
            value, used = parsed
            out.append(Reply(bytes(self._buf[:used]), value))
            del self._buf[:used]
        return out

    def _value(self, at: int) -> tuple[object, int] | None:
        buf = self._buf
        end = buf.find(CRLF, at)
        if end < 0:
            return None
        kind, line = bytes(buf[at:at + 1]), bytes(buf[at + 1:end])
        if kind in (b"+", b",", b"(", b"#"):  # simple string, double, big number, boolean
            return line, end + 2
        if kind == b"_":
            return None, end + 2
        if kind == b"-":
            return Err(line.decode("utf-8", "replace")), end + 2
        if kind == b":":
            return _number(line), end + 2
        if kind in (b"$", b"=", b"!"):  # bulk string, verbatim string, bulk error
            size = _number(line)
            if size < 0:
                return None, end + 2
            if len(buf) < end + 2 + size + 2:
                return None
            data = bytes(buf[end + 2:end + 2 + size])
            return (Err(data.decode("utf-8", "replace")) if kind == b"!" else data), end + 4 + size
        if kind in (b"*", b"~", b">", b"%", b"|"):  # array, set, push; map, attribute (pairs)
            count = _number(line) * (2 if kind in (b"%", b"|") else 1)
            if count < 0:
                return None, end + 2
            items, at = [], end + 2
            for _ in range(count):
                parsed = self._value(at)
                if parsed is None:
                    return None
                items.append(parsed[0])
                at = parsed[1]
            if kind == b"|":  # an attribute comes before the reply it describes
                return self._value(at)
            return items, at
        raise Malformed(f"the server sent {bytes(kind)!r}, not a RESP reply")
