"""Typed errors of the lab, split by who spoke: a :class:`Refusal` is a script's error reply,
named by its first word (its wire class); a :class:`HostCondition` is what the host saw on its
own. Both share the root :class:`EchoMQError`, so ``except errors.Refusal`` never swallows a
dead server. Bad arguments never reach the server: they raise ValueError or TypeError.
"""

from __future__ import annotations


class EchoMQError(Exception):
    """Root of every error the lab raises about the protocol; ``detail`` is the one-line text."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    def __str__(self) -> str:
        return self.detail


class Refusal(EchoMQError):
    """A script refused the call. ``wire_class`` is the first word of the server's reply."""

    wire_class: str = "EMQ"

    def __str__(self) -> str:
        return f"{self.wire_class}: {self.detail}"


class StaleToken(Refusal):
    """The presented token is not the row's current ``attempts``, or its lease is gone."""

    wire_class = "EMQSTALE"


class KindRefused(Refusal):
    """The enqueue script refused an id whose namespace is not ``JOB``."""

    wire_class = "EMQKIND"


class WrongState(Refusal):
    """The job is not in the state the verb needs (e.g. reprocess of a job that is not dead)."""

    wire_class = "EMQSTATE"


class BadRow(Refusal):
    """The row is not one the protocol could have written (``attempts`` not a whole number, or no
    payload for claim); the script refused before its first write."""

    wire_class = "EMQROW"


class BadArgument(Refusal, ValueError):
    """An argument is not in the form its script reads (a number not in decimal digits or out
    of bounds, an id that is not a JOB id, a prefix or key of another queue); refused before
    any write, by the script (docs/protocol.md, Arguments) or by a room's gateway, which
    applies the same rule (:mod:`echomq_lab.scripts.arguments`). ``detail`` names the argument."""

    wire_class = "EMQARG"


class NotWritten(Refusal):
    """The script is still the stub ``make transition`` wrote: it refuses every call, saying
    which transition is not written yet. Not a protocol reply: the lab's own, for its authors."""

    wire_class = "EMQTODO"

    def __str__(self) -> str:
        return self.detail


class HostCondition(EchoMQError):
    """Something the host found, named by ``label`` in plain words; ``str()`` is the detail."""

    label: str = "host condition"


class JobGone(HostCondition):
    """The job's row does not exist (never enqueued, or already completed)."""

    label = "job gone"


class SomeoneElse(HostCondition):
    """A demonstration's job was not where it left it (another client took it, or a claim handed
    out another client's job); the step is not taken."""

    label = "someone else took it"


class ServerUnavailable(HostCondition):
    """The server could not be reached; the message names the URL with its password hidden."""

    label = "server unreachable"


class NoAnswer(ServerUnavailable):
    """The server took the call but never answered in time: the call may or may not have run."""

    label = "no answer"


class AuthFailed(ServerUnavailable):
    """The server answered, but refused the client's credentials (a wrong or missing password)."""

    label = "authentication failed"


class NotReplicated(HostCondition):
    """A durable claim reached fewer replicas (``acked``) than asked (``wanted``) in time: job
    ``job_id`` is leased, but its ``token`` might not survive a failover, so do not start it."""

    label = "not replicated"

    def __init__(
        self, detail: str, *, job_id: str = "", token: int = 0, acked: int = 0, wanted: int = 0
    ) -> None:
        super().__init__(detail)
        self.job_id, self.token, self.acked, self.wanted = job_id, token, acked, wanted


class EvictionRisk(UserWarning):
    """The server may evict keys (``maxmemory-policy`` is not ``noeviction``): an evicted row takes
    its token with it, and a re-sent enqueue could restart the count. Warned once per connect."""


#: Each refusal's class by its wire class.
WIRE_CLASSES = {cls.wire_class: cls for cls in (StaleToken, KindRefused, WrongState, BadRow,
                                                    BadArgument, NotWritten)}


def from_reply(text: str) -> Refusal | None:
    """A script's error reply as its typed refusal (by the first word, the server's tail after
    `` script:`` cut), or None if the word is not a wire class."""
    word, _, rest = text.partition(" ")
    cls = WIRE_CLASSES.get(word)
    return None if cls is None else cls(rest.split(" script: ", 1)[0].strip())


def kind_of(exc: EchoMQError) -> str:
    """A short name for what happened: the wire class of a refusal, else the host's label."""
    return exc.wire_class if isinstance(exc, Refusal) else getattr(exc, "label", "error")
