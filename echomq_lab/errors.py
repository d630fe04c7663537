"""Typed refusals of the EchoMQ protocol.

Every refusal a script can answer is an :class:`EchoMQError` subclass that carries the wire
class (the first word of the script's error reply). Bad arguments never reach the server: they
raise :class:`ValueError` or :class:`TypeError` in the host instead.
"""

from __future__ import annotations


class EchoMQError(Exception):
    """Base class of every refusal the protocol answers.

    ``wire_class`` is the first word of the server's reply (``EMQSTALE``, ``EMQKIND``,
    ``EMQSTATE``); ``detail`` is the rest of the one-line message.
    """

    wire_class: str = "EMQ"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.wire_class}: {self.detail}"


class StaleToken(EchoMQError):
    """The presented token is not the row's current ``attempts``, or its lease is gone."""

    wire_class = "EMQSTALE"


class KindRefused(EchoMQError):
    """The enqueue script refused an id whose namespace is not ``JOB``."""

    wire_class = "EMQKIND"


class WrongState(EchoMQError):
    """The job is not in the state the verb needs (e.g. reprocess of a job that is not dead)."""

    wire_class = "EMQSTATE"


class JobGone(EchoMQError):
    """The job's row does not exist (never enqueued, or already completed)."""

    wire_class = "EMQGONE"


class ServerUnavailable(EchoMQError):
    """The server could not be reached; the message names the URL with its password hidden."""

    wire_class = "EMQDOWN"


WIRE_CLASSES: dict[str, type[EchoMQError]] = {
    cls.wire_class: cls for cls in (StaleToken, KindRefused, WrongState)
}


def from_reply(text: str) -> EchoMQError | None:
    """Map a script's error reply to its typed refusal by the first word, or None if unknown.

    Servers may append `` script: <sha>, on @user_script:N.`` to the text; that tail is cut.
    """
    word, _, rest = text.partition(" ")
    cls = WIRE_CLASSES.get(word)
    if cls is None:
        return None
    detail = rest.split(" script: ", 1)[0].strip()
    return cls(detail)
