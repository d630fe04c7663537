"""Self-checks graded by the server. The words live in ``questions.toml``; an observer
(:data:`OBSERVERS`) runs real transitions and reports an :class:`Observed` outcome, and the
right choice is the one whose ``when`` is that outcome, so it is never stored."""

from __future__ import annotations

import functools
import inspect
import re
import tomllib
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

import redis

from echomq_lab import branded, clock, jobs, keyspace, scripts, transitions
from echomq_lab.connection import reaching
from echomq_lab.lessons import unfenced
from echomq_lab.lessons.fencing import attempt
from echomq_lab.lessons.stories import new_job, row_of, wrote
from echomq_lab.queues import claim_expected, reset
from echomq_lab.row import Row, decoded

#: Leases: one the checks let run out, and one that stays held while a check looks.
SHORT_MS, LONG_MS = 60, 600_000
#: The longest choice a question may offer: a bare answer, no reasoning inside.
CHOICE_MAX = 48
#: Whose rule a question asks about, and how the page says it beside the question.
RULES: dict[str, str] = {"course": "the protocol as the course states it",
                         "lab": "the lab's own scripts, which go further than the course"}
#: A page's name, its ``slug`` in ``tools/pages.toml``: lowercase words joined by '-'.
PAGE_SLUG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


#: The file the self-checks' words come from, as an author finds it in the repository.
QUESTIONS = "echomq_lab/lessons/questions.toml"


class QuestionsError(ValueError):
    """``questions.toml`` (or the text given to :func:`build`) does not describe valid checks.

    :func:`build` says where: ``<file>:<line>: check '<key>', ...: what is wrong; fix: what to
    do``, one line. ``field`` and ``answer`` (1-based) say what the line is found by."""

    def __init__(self, message: str, field: str | None = None, answer: int | None = None):
        super().__init__(message)
        self.field, self.answer = field, answer


@dataclass(frozen=True)
class Observed:
    """One run: the ``outcome`` choices match (None: none does), ``did`` the whole run, and
    ``refute(when)`` what the server did against a choice waiting for ``when``."""

    outcome: str | None
    did: str
    refute: Callable[[str], str]


@dataclass(frozen=True)
class Graded:
    choice: str
    right: bool
    explanation: str
    did: str


def gives_away(text: str, *answers: str) -> bool:
    """True when ``text`` holds one of ``answers`` as whole words (case ignored)."""
    return any(re.search(rf"(?<!\w){re.escape(a)}(?!\w)", text, re.IGNORECASE)
               for a in answers if a)


@dataclass(frozen=True)
class Check:
    """One question of the page called ``page`` (its slug): ``choices[i]`` is right when the
    observer's outcome is ``outcomes[i]``, under ``rule`` (a key of :data:`RULES`)."""

    key: str
    page: str
    question: str
    choices: tuple[str, ...]
    outcomes: tuple[str, ...]
    observe: Callable[[redis.Redis, str], Observed]
    hint: str
    lesson: str
    rule: str = "course"

    @property
    def queue(self) -> str:
        """The queue this check runs on unless given another."""
        return f"check-{self.key}".replace("_", "-")

    def grade(self, conn: redis.Redis, queue: str, choice: str) -> Graded:
        """Run the check on ``queue`` and grade ``choice``; ValueError for an unknown choice."""
        if choice not in self.choices:
            raise ValueError(f"{choice!r} is not one of the choices: {'; '.join(self.choices)}")
        seen = self.observe(conn, queue)
        when = self.outcomes[self.choices.index(choice)]
        if seen.outcome == when:
            return Graded(choice, True, f"Right. The server: {seen.did}. {self.lesson}", seen.did)
        if seen.outcome not in self.outcomes:
            return Graded(choice, False, "None of the choices fits what the server did: "
                          f"{seen.did}.", seen.did)
        right = self.choices[self.outcomes.index(seen.outcome)]
        said = (f"Not this one. The server: {seen.refute(when)}. Hint: {self.hint}",
                f"Not this one: the server did not do that. Hint: {self.hint}",
                "Not this one: the server did not do that.")
        safe = next(s for s in said if s == said[-1] or not gives_away(s, right, seen.outcome))
        return Graded(choice, False, safe, seen.did)


def _count(n: int, one: str, many: str = "") -> str:
    """``n`` in words with ``one`` (or ``many``, default ``one`` + "s"): "one more field"."""
    word = {1: "one", 2: "two", 3: "three"}.get(n, str(n))
    return f"{word} {one if n == 1 else many or one + 's'}"


def fields(row: Row | None) -> str:
    """The row's fields as ``name=value``, each value cut at 24 characters."""
    if row is None:
        return "no row"
    return ", ".join(f"{decoded(k)}={row.shown(k)[:24]}" for k in row.field_order())


def names(row: Row | None) -> list[str]:
    return [decoded(k) for k in row.field_order()] if row else []


def refuting(said: Mapping[str, str], otherwise: str) -> Callable[[str], str]:
    """A refutation saying ``said[when]`` for a choice waiting for ``when``, else ``otherwise``."""
    return lambda when: said.get(when, otherwise)


def claim_fields(conn: redis.Redis, queue: str) -> Observed:
    """Claim a new job; the outcome names the fields whose value changed, sorted."""
    job_id = new_job(conn, queue, fresh=True)
    before = row_of(conn, queue, job_id)
    claimed = claim_expected(conn, queue, job_id, LONG_MS)
    after = row_of(conn, queue, job_id)
    old, new = before or Row({}), after or Row({})
    changed = {decoded(k) for k in {*old, *new} if old.get(k) != new.get(k)}
    kept = {decoded(k) for k in new} - changed

    def refute(when: str) -> str:
        # how many fields the choice missed or named wrongly, never which: naming them would
        # name the answer
        named = set(when.split())
        missed, still = len(changed - named), len(kept & named)
        parts = [f"claim changed {_count(missed, 'more field')} than that"] if missed else []
        parts += [f"claim left {_count(still, 'of those fields', 'of those fields')} as "
                  "it was"] if still else []
        return "; ".join(parts) or "claim changed other fields"

    did = f"claim wrote {wrote(before, after)} and handed the worker token {claimed.token}"
    return Observed(" ".join(sorted(changed)), did, refute)


#: The ways a row may end, as steps from a claim: the last names the end, its first word the when.
ENDINGS = (("claim", "complete"), ("claim", "retry at the cap"),
           ("claim briefly", "expire", "reap"))


def row_deleter(conn: redis.Redis, queue: str) -> Observed:
    """Take each ending on a job; the outcome is the one that left no row (``none``: none)."""
    after: dict[str, Row | None] = {}
    for claim, *then in ENDINGS:
        job_id = new_job(conn, queue, fresh=True)
        token = _step(conn, queue, job_id, claim, 0).token
        for step in then:
            _step(conn, queue, job_id, step, token)
        after[then[-1]] = row_of(conn, queue, job_id)
    reset(conn, queue)
    gone = [words.split()[0] for words, row in after.items() if row is None]
    told = {words.split()[0]: f"after {words} the row "
            + ("was gone" if row is None else f"still held {fields(row)}")
            for words, row in after.items()}
    said = {**told, "none": f"one of the {len(ENDINGS)} rows was gone afterwards"}
    outcome = gone[0] if len(gone) == 1 else ("none" if not gone else None)
    return Observed(outcome, "; ".join(told.values()), refuting(said, "it ran something else"))


def id_field(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue a job; ``id field`` when its row has a field named id, else ``key only``."""
    job_id = new_job(conn, queue, fresh=True)
    found = names(row_of(conn, queue, job_id))
    said = {"id field": "none of the new row's fields is called id"}
    # the fields are not listed: the page asks which fields a new row holds after this check
    did = (f"the row's key is {keyspace.job_key(queue, job_id)}, which ends with the id; "
           f"{'one' if 'id' in found else 'none'} of its fields is called id")
    return Observed("id field" if "id" in found else "key only", did,
                    refuting(said, "the new row has a field called id"))


def mint_time(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue a job: ``created_at`` when its row has that field, ``pending score`` when
    pending scores it above 0, else ``in id``."""
    job_id = new_job(conn, queue, fresh=True)
    row = row_of(conn, queue, job_id)
    with reaching(conn):
        score = conn.zscore(keyspace.queue_key(queue, "pending"), job_id) or 0.0
    minted = branded.parse(job_id).minted_at.isoformat(timespec="milliseconds")
    outcome = "created_at" if "created_at" in names(row) else (
        "pending score" if score else "in id")
    said = {"created_at": "the new row has no created_at field",
            "pending score": f"pending scores the new job {score:g}, as it scores every job"}
    had = "a" if "created_at" in names(row) else "no"
    did = (f"the row has {had} created_at field, pending scores the job {score:g}, and the "
           f"id {job_id} decodes to a mint time of {minted}")
    return Observed(outcome, did,
                    refuting(said, "the time the server kept is not the one inside the id"))


#: A payload no text decoder likes: NUL bytes, invalid UTF-8, every byte value once.
BINARY = b"\x00head\xff\xfe" + bytes(range(256)) + b"tail\x00"
PROBES = (b"", b'{"report": "march"}', b"EMQSTALE not json {", BINARY, b"x" * 10_000)
FACTS: dict[str, object] = {"binary_bytes": len(BINARY)}


def payload_round_trip(conn: redis.Redis, queue: str) -> Observed:
    """Enqueue :data:`BINARY` and claim it: ``same``, ``cut`` at a NUL, or UTF-8 ``replaced``."""
    job_id = new_job(conn, queue, BINARY, fresh=True)
    got = claim_expected(conn, queue, job_id, LONG_MS).payload
    replaced = BINARY.decode("utf-8", errors="replace").encode()
    outcome = {BINARY: "same", BINARY[: BINARY.index(b"\x00")]: "cut", replaced: "replaced"}
    said = {"cut": f"claim handed back {len(got)} bytes, {got.count(0)} of them NUL",
            "replaced": f"claim handed back {len(got)} bytes; byte 0xff is in it "
                        f"{got.count(255)} times"}
    others = f"claim handed back {len(got)} bytes of the {len(BINARY)} enqueued, not them all"
    same = "identical to" if got == BINARY else "not the same as"
    did = f"claim returned {len(got)} bytes, {same} the {len(BINARY)} enqueued"
    return Observed(outcome.get(got), did, refuting(said, others))


def _walk_payload(conn: redis.Redis, queue: str, payload: bytes) -> list[str]:
    """The replies and states of one job with ``payload`` through a whole cycle, ids left out."""
    job_id = new_job(conn, queue, payload, fresh=True)
    row = row_of(conn, queue, job_id)
    first = claim_expected(conn, queue, job_id, LONG_MS)
    retried = jobs.retry(conn, queue, job_id, first.token, 0, 3, "e")
    promoted = jobs.promote(conn, queue)
    second = claim_expected(conn, queue, job_id, LONG_MS)
    return [row.state or "?" if row else "no row", str(first.token), retried, str(promoted),
            str(second.token), jobs.complete(conn, queue, job_id, second.token)]


def payload_read(conn: redis.Redis, queue: str) -> Observed:
    """Walk each of :data:`PROBES` through the cycle: ``unread`` when all got the same replies."""
    walks = {p: _walk_payload(conn, queue, p) for p in PROBES}
    reset(conn, queue)
    alike = len({tuple(w) for w in walks.values()}) == 1
    # The lines of the shipped scripts that name the payload field, as ``script: line``.
    lines = [f"{name}: {line.strip()}" for name in scripts.names()
             for line in scripts.load(name).source.splitlines()
             if "'payload'" in line and not line.lstrip().startswith("--")]  # fmt: skip

    def refute(when: str) -> str:
        verb = when.split()[0]
        named = [line.split(": ", 1)[1] for line in lines if line.startswith(verb)]
        return (f"{len(PROBES)} jobs, from an empty payload to 10 kB of binary, got "
                f"{'identical' if alike else 'different'} replies from {verb}, whose script "
                f"names the payload only in {'; '.join(named) or 'no line'}")

    did = (f"{len(PROBES)} jobs with very different payloads (empty, JSON, not JSON, binary, "
           f"10 kB) went through enqueue, claim, retry, promote, claim and complete with "
           f"{'the same' if alike else 'different'} replies and states; the scripts name the "
           f"field only in {'; '.join(lines)}")
    return Observed("unread" if alike else None, did, refute)


Step = Literal["claim", "claim briefly", "expire", "reap", "promote", "complete", "retry",
               "retry at the cap", "extend", "reprocess", "complete stale", "retry stale",
               "extend stale", "complete future"]
Ask = Literal["reply", "state", "attempts", "token", "fields"]


#: How a story's steps read in the feedback a learner sees (the steps' own names are the
#: question file's grammar, not words for a learner); any other step reads as its verb alone
#: ("complete stale": complete, with the token it sent).
STEP_WORDS: dict[str, str] = {
    "claim briefly": "claim with a short lease", "expire": "the lease runs out",
    "retry at the cap": "retry at max tries",
}


def _step(conn: redis.Redis, queue: str, job_id: str, step: str, token: int) -> Any:
    """Take one step of a question's story on ``job_id``: ``claim`` (``briefly``: a short
    lease) takes the job itself, ``expire`` waits its lease out, any other verb is the
    registry's transition of that name, called as its entry says (``at the cap``: a cap of
    attempts equal to ``token``)."""
    verb, _, how = step.partition(" ")
    if verb == "claim":
        return claim_expected(conn, queue, job_id, SHORT_MS if how == "briefly" else LONG_MS)
    if verb == "expire":
        return clock.wait_out_lease(conn, queue, job_id)
    t = transitions.get(verb)
    cap = token if how == "at the cap" else token + 1
    values = {"job": job_id, "token": token, "lease": LONG_MS, "delay": 0,
              "max_attempts": cap, "error": "it failed"}
    return getattr(jobs, t.call.handle)(conn, queue, *t.arguments(values))


Rule = Literal["course", "lab"]


def story(conn: redis.Redis, queue: str, *, steps: list[Step], ask: Ask,
          rule: Rule = "lab") -> Observed:
    """Enqueue one job and take ``steps`` (``claim briefly``: a lease ``expire`` waits out; a
    ``stale`` step sends the token before the live one, a ``future`` one the token after it).
    Under the course's ``rule`` a complete is the course's (the token against attempts only).
    The outcome is what ``ask`` names after the last step (``none`` without a row)."""
    job_id = new_job(conn, queue, fresh=True)
    token, told, reply, label = 0, ["enqueue: done"], "accepted", "enqueue"
    for step in steps:
        verb, _, how = step.partition(" ")
        sent = {"stale": token - 1, "future": token + 1}.get(how, token)
        said = STEP_WORDS.get(step, verb)
        label = f"{said} with token {sent}" if verb in transitions.FENCED else said
        take = (functools.partial(unfenced.complete_token_only, conn, queue, job_id, sent)
                if rule == "course" and verb == "complete" else
                functools.partial(_step, conn, queue, job_id, step, sent))
        result = attempt(take)
        held = row_of(conn, queue, job_id)
        if step.startswith("claim") and result.accepted and held is not None:
            token = held.attempts or 0
        reply = result.kind
        told.append(f"{label}: {result.words() if not result.accepted else 'done'}")
    row = row_of(conn, queue, job_id)
    seen = {"reply": reply, "token": str(token),
            "state": row.state or "none" if row else "none",
            "attempts": str(row.attempts) if row else "none",
            "fields": " ".join(sorted(names(row)))}

    def refute(when: str) -> str:
        if ask == "fields":
            named, held = set(when.split()), set(names(row))
            return "; ".join([f"the row also held {f}" for f in sorted(held - named)]
                             + [f"the row held no {f} field" for f in sorted(named - held)])
        return f"after {label}, the {ask} was not {when}"

    return Observed(seen[ask], "; ".join([*told, f"the row then held {fields(row)}"]), refute)


Observer = Callable[..., Observed]
#: Every observer a question may name, by name.
OBSERVERS: dict[str, Observer] = {fn.__name__: fn for fn in (
    claim_fields, row_deleter, id_field, mint_time, payload_round_trip, payload_read, story)}
GENERAL = {"story"}  # may go unused by the course's questions
REQUIRED = ("key", "page", "question", "answers", "hint", "lesson")
OPTIONAL = ("observer", "params", "rule")


def shipped_text() -> str:
    """The text of the ``questions.toml`` shipped with the package."""
    return resources.files(__package__).joinpath("questions.toml").read_text("utf-8")


def _filled(where: str, text: Any, facts: Mapping[str, object], field: str,
            answer: int | None = None) -> str:
    if not isinstance(text, str) or not text.strip():
        raise QuestionsError(f"{where} must be some text, not {text!r}; fix: write it between "
                             "double quotes", field, answer)
    try:
        return text.format_map(facts)
    except (KeyError, ValueError, IndexError) as exc:
        raise QuestionsError(f"{where}: cannot fill in {text!r} ({exc!r}); fix: name one of the "
                             f"facts ({', '.join(facts) or 'none'}) or write {{{{ and }}}} for "
                             "a brace", field, answer) from None


def _answers(where: str, raw: Any,
             facts: Mapping[str, object]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(choices, outcomes) of an entry's ``answers``."""
    if not isinstance(raw, list) or len(raw) < 2:
        raise QuestionsError(f"{where}: answers must list at least two choices; fix: "
                             'answers = [ { when = "...", text = "..." }, ... ]', "answers")
    choices: list[str] = []
    outcomes: list[str] = []
    for i, answer in enumerate(raw, start=1):
        if not isinstance(answer, dict) or set(answer) != {"when", "text"}:
            raise QuestionsError(f"{where}, answer {i}: give exactly when and text; fix: "
                                 '{ when = "<outcome>", text = "<the choice>" }', "answers", i)
        if not isinstance(answer["when"], str) or answer["when"] in outcomes:
            raise QuestionsError(f"{where}, answer {i}: its when {answer['when']!r} must be a "
                                 "word no other choice of the question uses; fix: give each "
                                 "choice the outcome that makes it right", "answers", i)
        text = _filled(f"{where}, answer {i}", answer["text"], facts, "answers", i)
        if len(text) > CHOICE_MAX:
            raise QuestionsError(f"{where}, answer {i}: a choice is a bare answer of at most "
                                 f"{CHOICE_MAX} characters, not {len(text)}; fix: shorten it, "
                                 "and say the why in hint or lesson", "answers", i)
        if ":" in text:
            raise QuestionsError(f"{where}, answer {i}: {text!r} gives a reason after a colon, "
                                 "and a choice is a bare answer (no reason after a colon); fix: "
                                 f"keep {text.split(':')[0].strip()!r} and move the rest into "
                                 "hint or lesson", "answers", i)
        choices.append(text)
        outcomes.append(answer["when"])
    if len(set(choices)) < len(choices):
        raise QuestionsError(f"{where}: two choices read the same; fix: reword one", "answers")
    return tuple(choices), tuple(outcomes)


def _bound(where: str, name: str, fn: Observer, params: Any) -> Observer:
    """``fn`` with ``params`` bound, each checked against its Literal (or list of Literal)."""
    if not isinstance(params, dict):
        raise QuestionsError(f"{where}: params must be a table, not {params!r}; fix: "
                             "params = { name = value, ... }", "params")
    try:
        inspect.signature(fn).bind(None, None, **params)
    except TypeError as exc:
        raise QuestionsError(f"{where}: observer {name} does not take these params: "
                             f"{exc}; fix: give the ones checks.{name} takes", "params") from None
    for arg, value in params.items():
        kind = typing.get_type_hints(fn)[arg]
        many = typing.get_origin(kind) is list
        if many and not isinstance(value, list):
            raise QuestionsError(f"{where}: {arg} must be a list, not {value!r}; fix: "
                                 f"{arg} = [{value!r}]", "params")
        allowed = typing.get_args(typing.get_args(kind)[0] if many else kind)
        for one in value if many else [value]:
            if one not in allowed:
                raise QuestionsError(f"{where}: {arg} = {one!r} is not one of {allowed}; fix: "
                                     "pick one of those", "params")
    return functools.partial(fn, **params) if params else fn


def _check(entry: Any, observers: Mapping[str, Observer], facts: Mapping[str, object]) -> Check:
    if not isinstance(entry, dict):
        raise QuestionsError(f"every [[checks]] entry must be a table, not {entry!r}")
    where = f"check {entry.get('key', '(no key)')!r}"
    missing = [f for f in REQUIRED if f not in entry]
    unknown = sorted(set(entry) - {*REQUIRED, *OPTIONAL})
    if missing or unknown:
        raise QuestionsError(f"{where}: missing {missing or 'nothing'}, "
                             f"unknown {unknown or 'none'}; fix: an entry holds "
                             f"{', '.join(REQUIRED)} (and may hold {', '.join(OPTIONAL)})",
                             unknown[0] if unknown else None)
    key, page = entry["key"], entry["page"]
    if not isinstance(key, str) or not key.isidentifier():
        raise QuestionsError(f"{where}: the key must be a Python-style name; fix: "
                             'key = "lower_case_words"', "key")
    if not isinstance(page, str) or not PAGE_SLUG.fullmatch(page):
        raise QuestionsError(f"{where}: page must be the page's slug as tools/pages.toml "
                             f"names it (lowercase-words), not {page!r}; fix: copy its slug "
                             "from there", "page")
    name = entry.get("observer", key)
    if name not in observers:
        raise QuestionsError(f"{where}: no observer called {name!r} (there are "
                             f"{', '.join(sorted(observers))}); fix: name one, or write a "
                             'story (observer = "story")', "observer" if "observer" in entry
                             else "key")
    rule = entry.get("rule", "course")
    if rule not in RULES:
        raise QuestionsError(f"{where}: rule must be one of {', '.join(RULES)}, not {rule!r}; "
                             "fix: pick one of those", "rule")
    text = {f: _filled(f"{where}, {f}", entry[f], facts, f) for f in ("question", "hint", "lesson")}
    params = entry.get("params", {})
    if name == "story" and isinstance(params, dict):  # a story runs under the check's rule
        params = {"rule": rule, **params}
    observe = _bound(where, name, observers[name], params)
    choices, outcomes = _answers(where, entry["answers"], facts)
    return Check(key, page, text["question"], choices, outcomes, observe, text["hint"],
                 text["lesson"], rule)


def _line(lines: list[str], start: int, end: int, field: str | None,
          answer: int | None) -> int:
    """The 1-based line of an entry (lines ``start`` to ``end``, 0-based) where ``field`` (its
    ``answer``-th choice, if given) is written; the entry's own line when it cannot tell."""
    at = start
    for n in range(start, end):
        if field and re.match(rf"\s*{re.escape(field)}\s*=", lines[n]):
            at = n
            break
    if answer is not None:
        seen = 0
        for n in range(at, end):
            seen += len(re.findall(r"\bwhen\s*=", lines[n]))
            if seen >= answer:
                return n + 1
    return at + 1


def build(observers: Mapping[str, Observer] = OBSERVERS, facts: Mapping[str, object] = FACTS,
          text: str | None = None, source: str = "") -> tuple[Check, ...]:
    """The checks ``text`` (default: the shipped file) describes; QuestionsError at the first
    mistake, one line: ``<source>:<line>: what is wrong; fix: what to do`` (``source``:
    :data:`QUESTIONS` for the shipped file, else "questions.toml")."""
    source = source or (QUESTIONS if text is None else "questions.toml")
    raw = shipped_text() if text is None else text
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        where = f"{source}:{found[1]}" if found else source
        raise QuestionsError(f"{where}: not valid TOML ({exc}); fix: put every text between "
                             'double quotes on one line ("..."), with \\" for a quote '
                             "inside") from None
    if set(data) != {"checks"} or not isinstance(data["checks"], list):
        raise QuestionsError(f"{source}: questions.toml must hold [[checks]] entries and "
                             "nothing else; fix: begin each question with a [[checks]] line")
    lines = raw.splitlines()
    starts = [n for n, line in enumerate(lines) if line.strip() == "[[checks]]"]
    made = []
    for i, entry in enumerate(data["checks"]):
        try:
            made.append(_check(entry, observers, facts))
        except QuestionsError as exc:
            if len(starts) != len(data["checks"]):
                raise QuestionsError(f"{source}: {exc}") from None
            end = starts[i + 1] if i + 1 < len(starts) else len(lines)
            line = _line(lines, starts[i], end, exc.field, exc.answer)
            raise QuestionsError(f"{source}:{line}: {exc}") from None
    doubled = sorted(k for k, n in Counter(c.key for c in made).items() if n > 1)
    if doubled:
        raise QuestionsError(f"{source}: two questions share the key {', '.join(doubled)}; "
                             "fix: rename one (a key names its queue too)")
    used = {e.get("observer", e["key"]) for e in data["checks"]} | GENERAL
    idle = sorted(set(observers) - used)
    if idle:
        raise QuestionsError(f"{source}: no question uses the observer {', '.join(idle)}: add "
                             "its question to questions.toml or remove the observer")
    return tuple(made)


@functools.cache
def all_checks() -> tuple[Check, ...]:
    """Every check of the shipped ``questions.toml``, read once, when first asked for: a
    mistake in the file fails what asks for a check (saying where and what to do), not every
    import of the lab."""
    return build()


def __getattr__(name: str) -> tuple[Check, ...]:
    """``CHECKS``: :func:`all_checks`, read when first used."""
    if name == "CHECKS":
        return all_checks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def for_page(page: str) -> list[Check]:
    """The checks of the page called ``page`` (its slug), in the order it asks them.

    TypeError for anything but a string; ValueError (one line, naming the pages that ask
    checks) for a name no check gives.
    """
    if not isinstance(page, str):
        raise TypeError(f"page must be the page's name, e.g. 'the-payload', not {page!r}")
    found = [c for c in all_checks() if c.page == page]
    if not found:
        raise ValueError(f"no page called {page!r} asks self-checks; the pages that do are "
                         f"{', '.join(pages())}")
    return found


def pages() -> list[str]:
    """The slugs of the pages that ask self-checks, in the order ``questions.toml`` lists them."""
    return list(dict.fromkeys(c.page for c in all_checks()))


def get(key: str) -> Check:
    """The check called ``key``; ValueError naming the keys when there is none."""
    for check in all_checks():
        if check.key == key:
            return check
    raise ValueError(f"no check called {key!r}: pick one of "
                     f"{', '.join(c.key for c in all_checks())}")
