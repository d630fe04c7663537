"""Typed errors of the lab, split by who spoke.

- :class:`Refusal` and its subclasses are answers **the server gave**: a script replied with an
  error whose first word is a wire class (``EMQSTALE``, ``EMQKIND``, ``EMQSTATE``,
  ``EMQROW``).
- :class:`HostCondition` and its subclasses are what **the host saw** on its own: the row it
  asked about does not exist (:class:`JobGone`), or the server could not be reached
  (:class:`ServerUnavailable`; more precisely :class:`NoAnswer` when it took the call but never
  answered, :class:`AuthFailed` when it refused the password). They carry no wire class; their
  text is the lab's own words.

Both branches share the root :class:`EchoMQError`, so ``except errors.Refusal`` never swallows a
dead server. Bad arguments never reach the server: they raise :class:`ValueError` or
:class:`TypeError` in the host instead.
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
    """The job's row is not one the protocol could have written (its ``attempts`` is not a whole
    number, or claim found no payload); the script refused before its first write."""

    wire_class = "EMQROW"


class HostCondition(EchoMQError):
    """Something the host found, not a refusal the server answered.

    ``label`` names the condition in plain words (``job gone``, ``server unreachable``); it is
    never a wire class, and ``str()`` shows only the detail.
    """

    label: str = "host condition"


class JobGone(HostCondition):
    """The job's row does not exist (never enqueued, or already completed)."""

    label = "job gone"


class SomeoneElse(HostCondition):
    """A demonstration's job was not where it left it: another client took it, or a claim
    handed out another client's job. The step is not taken."""

    label = "someone else took it"


class ServerUnavailable(HostCondition):
    """The server could not be reached; the message names the URL with its password hidden."""

    label = "server unreachable"


class NoAnswer(ServerUnavailable):
    """The server took the call but gave no answer in time (a frozen or overloaded server): the
    call may or may not have run, so a caller must not assume either."""

    label = "no answer"


class AuthFailed(ServerUnavailable):
    """The server answered, but refused the client's credentials (a wrong or missing password)."""

    label = "authentication failed"


class NotReplicated(HostCondition):
    """A durable claim's write reached fewer replicas than asked for in time.

    The job is leased all the same, but its token might not survive a failover, so the worker
    must not start on it; the lease runs out and the reaper hands the job on. ``job_id`` and
    ``token`` name the claim, ``acked`` and ``wanted`` count the replicas.
    """

    label = "not replicated"

    def __init__(
        self, detail: str, *, job_id: str = "", token: int = 0, acked: int = 0, wanted: int = 0
    ) -> None:
        super().__init__(detail)
        self.job_id, self.token, self.acked, self.wanted = job_id, token, acked, wanted


class EvictionRisk(UserWarning):
    """The server may evict keys under memory pressure (its ``maxmemory-policy`` is not
    ``noeviction``). The fence lives in a job's row: an evicted row takes its token with it,
    and a re-sent enqueue could start the count again. Warned once per :func:`connect`."""


WIRE_CLASSES: dict[str, type[Refusal]] = {
    cls.wire_class: cls for cls in (StaleToken, KindRefused, WrongState, BadRow)
}


def from_reply(text: str) -> Refusal | None:
    """Map a script's error reply to its typed refusal by the first word, or None if unknown.

    Servers may append `` script: <sha>, on @user_script:N.`` to the text; that tail is cut.
    """
    word, _, rest = text.partition(" ")
    cls = WIRE_CLASSES.get(word)
    if cls is None:
        return None
    detail = rest.split(" script: ", 1)[0].strip()
    return cls(detail)


def kind_of(exc: EchoMQError) -> str:
    """A short name for what happened: the wire class of a refusal, else the host's label."""
    return exc.wire_class if isinstance(exc, Refusal) else getattr(exc, "label", "error")
