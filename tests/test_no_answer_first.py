"""No answer before its question: what a reader meets before a self-check or a prediction of
the story never states its right answer.

The right answer is not stored anywhere: for a self-check (echomq_lab/lessons/questions.toml)
it is the choice the server's run grades right, found here by grading every choice on the
embedded server; for a prediction of page 02's story it is the outcome the server gave, found by
playing the story. What "states the answer" means is written once per question below
(:data:`STATES`, :data:`PREDICTS`): sentences that would tell a reader the answer in that
question's situation. Each is held to two sides, so it can fail either way:

- it must match what the server says once the reader has it right (its verdict), so that it
  recognises a statement of the answer and is not a pattern that matches nothing;
- it must match no sentence the reader meets before the question.

What a reader meets before a self-check on a page: every page's summary (the landing page and
the hub list them); the hub as it opens, if the check is on a later page; the page's own text
above the question as stored (markdown with its folded answers left out, each cell's shown
output, and every field's card of a field picker, which the reader may pick); every verdict
of the page's earlier checks, right and wrong; and the check's own feedback on each wrong
choice. Before a prediction of the story: page 02's text above the story, and the panel as it
stands when it asks (lanes, beliefs, heading, prompt, log, every earlier verdict and the
feedback on each wrong pick of the same question).

One overlap is allowed and named (:data:`BY_DESIGN`): the hub's one fact, the three fields of
a new row, which 01's last check asks the reader to recall after the hub.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from echomq_lab import connection
from echomq_lab.lessons import checks
from echomq_lab.lessons import two_workers as tw
from echomq_lab.widgets import FieldPicker, TwoWorkersStory
from tools.course import file_of
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parents[1]
HUB = "the-record-hash"

#: Per self-check: sentences that state its right answer, in its situation.
STATES: dict[str, tuple[str, ...]] = {
    "claim_fields": (r"\bclaim\w*\b.{0,60}(state=active, attempts=|state and attempts"
                     r"|writes? (both )?state\b.{0,30}\battempts)",
                     r"marks the job active and adds one"),
    "row_deleter": (r"(delet|retir|remov)\w*\b.{0,40}\bcomplete\b",
                    r"\bcomplete\b.{0,40}\b(delet|retir|remov)\w*",
                    r"after complete the row was gone", r"only a finished job is retired"),
    "id_field": (r"\bno `?id`? field", r"id is (only )?in the key", r"\bid is the key",
                 r"key already names the job", r"none of (its|the row's) fields is called id"),
    "mint_time": (r"(mint|birth|creat)\w*( time)?\b.{0,40}\binside the (job's )?id",
                  r"decodes to a mint time", r"carries its own birth time"),
    "fresh_row": (r"\bthree fields\b", r"state=pending, attempts=0, payload=",
                  r"writes the whole row at birth"),
    "after_reprocess": (r"\btoken 4\b", r"\battempts=4\b", r"reprocess (leaves|keeps) attempts",
                        r"attempts (kept|untouched) by reprocess"),
    "token_above": (r"\btoken 3\b.{0,40}(refused|EMQSTALE|stale)", r"fence is equality",
                    r"any (other )?token but.{0,40}(refused|stale)",
                    r"(too high|higher|newer) token.{0,40}(refused|stale)"),
    "token_reaped": (r"(holds no lease|not active|no longer in active|reaped|lease (ran out|is "
                     r"gone)).{0,80}(refused|EMQSTALE)",
                     r"(refused|EMQSTALE).{0,80}(holds no lease|not active|no longer in active)"),
    "payload_round_trip": (r"byte for byte", r"\bverbatim\b", r"identical to the \d+",
                           r"what goes in comes out", r"(same|unchanged|untouched) bytes"),
    "payload_read": (r"never (read|interpret|inspect|look|decod|pars)\w*",
                     r"no script (decides|reads|interprets|decodes|parses|looks)",
                     r"same replies and states", r"\bopaque\b"),
}
#: Per prediction of the story, by step and fence setting (a step whose answer does not depend
#: on the fence is listed once, with the fence on).
PREDICTS: dict[tuple[str, bool], tuple[str, ...]] = {
    ("b_claims", True): (r"\btoken 2\b", r"attempts (is now |is |=)2\b", r"add(s|ed)? one",
                         r"one (up|more|higher)", r"\+ ?1\b"),
    ("a_completes", True): (r"\bA refused\b", r"EMQSTALE:? token", r"\bdiffer", r"≠",
                            r"\bis stale\b", r"complete refused"),
    ("a_completes", False): (r"\baccepted\b", r"went through", r"reads no token"),
    (tw.BRANCH[0], True): (r"accepted by the course's complete",
                           r"course's complete.{0,80}\b(accepted|retired)\b",
                           r"left attempts at \d", r"token still equals attempts"),
    (tw.LAB_BRANCH[0], True): (r"lab's complete.{0,100}(refus|EMQSTALE|stale)",
                               r"lab's complete also (looks|asks)",
                               r"(refus|EMQSTALE).{0,100}(no lease|not active|lab's check)"),
}
#: (check, where) pairs allowed to overlap, and why.
BY_DESIGN: dict[tuple[str, str], str] = {
    ("fresh_row", "hub"): "the hub's one fact is the three fields of a new row (the course's "
                          "module hub); 01 asks the reader to recall it after the hub",
}


def sentences(text: str) -> list[str]:
    """``text`` (markup taken out) cut into sentences: at full stops, semicolons and lines."""
    plain = html.unescape(re.sub(r"<[^>]+>", " ", text))
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|;|\n", plain) if s.strip()]


def stating(patterns: tuple[str, ...], text: str) -> list[str]:
    """The sentences of ``text`` that match one of ``patterns``."""
    found = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    return [s for s in sentences(text) if found.search(s)]


# -- what a stored page shows ------------------------------------------------------------------

def _file(slug: str) -> Path:
    return ROOT / "notebooks" / file_of(slug)


def _src(cell: dict[str, object]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)  # type: ignore[arg-type]


def _shown(cell: dict[str, object]) -> Iterator[str]:
    """What a cell shows: markdown without its folds, or a code cell's outputs as text; a field
    picker adds every field's card (a reader may pick any)."""
    if cell["cell_type"] == "markdown":
        yield re.sub(r"<details>.*?</details>", "", _src(cell), flags=re.DOTALL)
        return
    for out in cell.get("outputs", []):  # type: ignore[attr-defined]
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        yield text if isinstance(text, str) else "".join(text)
    if "FieldPicker(" in _src(cell):
        picker = FieldPicker()
        for name in picker.picker.options:
            picker.picker.value = name
            yield picker.text()


def shown_before(slug: str, key: str | None) -> str:
    """The text of page ``slug`` above ``SelfCheck(conn, "<key>")`` (the whole page: None)."""
    cells = json.loads(_file(slug).read_text())["cells"]
    out: list[str] = []
    for cell in cells:
        if key is not None and f'SelfCheck(conn, "{key}")' in _src(cell):
            return "\n".join(out)
        out.extend(_shown(cell))
    if key is not None:
        raise AssertionError(f"{slug} never asks {key}")
    return "\n".join(out)


@pytest.fixture(scope="module")
def conn() -> redis.Redis:
    return connection.connect(fresh=True)


@pytest.fixture(scope="module")
def verdicts(conn: redis.Redis) -> dict[str, dict[str, checks.Graded]]:
    """Every check's verdict on every choice, graded by the server."""
    return {c.key: {choice: c.grade(conn, c.queue, choice) for choice in c.choices}
            for c in checks.CHECKS}


def test_every_check_and_prediction_has_its_statements() -> None:
    assert set(STATES) == {c.key for c in checks.CHECKS}
    steps = {step for step, _ in PREDICTS}
    assert steps == set(tw.PREDICTIONS)


def test_a_statement_is_recognised_and_an_unrelated_line_is_not() -> None:
    assert stating(STATES["row_deleter"], "deleted by: complete, with the whole row")
    assert stating(STATES["payload_round_trip"], "The payload: opaque cargo, returned byte for "
                                                 "byte.")
    assert stating(STATES["id_field"], "**4.** The row has no `id` field. How does a worker")
    assert not stating(STATES["row_deleter"], "Which of these transitions deletes the row?")
    # the story's wrong-pick lines as they were, each naming the answer or its sum
    old = {("b_claims", True): "Not 1: that is A's token. The reaper left attempts at 1, and "
                               "B's claim added one to it before handing it out.",
           ("a_completes", False): "Not refused: this copy of complete reads no token at all",
           (tw.BRANCH[0], True): "Not refused: the course's complete compares A's token 1 "
                                 "with attempts, and the reaper left attempts at 1.",
           (tw.LAB_BRANCH[0], True): "Not accepted: A's token 1 still equals attempts, but the "
                                     "lab's complete also looks for the id in active"}
    for (step, fence), line in old.items():
        assert stating(PREDICTS[(step, fence)], line), (step, line)


@pytest.mark.parametrize("check", checks.CHECKS, ids=lambda c: c.key)
def test_no_check_is_answered_before_it_is_asked(
    check: checks.Check, verdicts: dict[str, dict[str, checks.Graded]]
) -> None:
    mine = verdicts[check.key]
    right = [g for g in mine.values() if g.right]
    assert len(right) == 1, f"{check.key}: the server graded {len(right)} choices right"
    patterns = STATES[check.key]
    assert stating(patterns, right[0].explanation), (
        f"{check.key}: its statements do not recognise its own verdict: "
        f"{right[0].explanation}")
    earlier = [c for c in checks.CHECKS if c.page == check.page]
    earlier = earlier[:earlier.index(check)]
    places = {
        "the summaries": "\n".join(f"{p.title}: {p.summary}." for p in course_pages()),
        "above it on its page": shown_before(check.page, check.key),
        "its own feedback on a wrong choice": "\n".join(
            g.explanation for g in mine.values() if not g.right),
        "an earlier check's verdict": "\n".join(
            g.explanation for c in earlier for g in verdicts[c.key].values()),
    }
    if check.page != HUB:
        places["hub"] = shown_before(HUB, None)
    for where, text in places.items():
        if (check.key, where) in BY_DESIGN:
            continue
        said = stating(patterns, text)
        assert not said, f"{check.key} is answered in {where}: {said[:3]}"


def test_the_overlaps_allowed_are_still_there() -> None:
    """An allowance is dropped once the overlap it allows is gone."""
    for (key, where), _why in BY_DESIGN.items():
        assert where == "hub"
        assert stating(STATES[key], shown_before(HUB, None)), (key, where)


# -- the story's predictions ---------------------------------------------------------------------

def _story_intro() -> str:
    cells = json.loads(_file("the-state-and-attempts").read_text())["cells"]
    out: list[str] = []
    for cell in cells:
        if "TwoWorkersStory(" in _src(cell) and cell["cell_type"] == "code":
            return "\n".join(out)
        out.extend(_shown(cell))
    raise AssertionError("02 has no story")


def _on_screen(panel: TwoWorkersStory) -> str:
    """What the story panel shows now: its text, prompt, message, log and fork offer."""
    parts = [panel.text(), panel.prompt.value, panel.message.value, panel.log.value,
             panel.heading.value, panel.lanes.value, panel.beliefs.value]
    if panel.story.fork is not None:
        parts.append(panel.fork_note.value)
    shown = "\n".join(parts)
    for ask in tw.PREDICTIONS.values():  # the list of choices names every answer, and none
        shown = shown.replace(f"({' / '.join(ask.choices)})", "(the choices)")
    return shown


def _play(panel: TwoWorkersStory, path: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """Play ``path``, each prediction wrong first in every way: (step, what was on screen
    before the right pick, the right pick's verdict) for each prediction."""
    seen: list[tuple[str, str, str]] = []
    screen = ""
    for step in path:
        if step == tw.BRANCH[0] and panel.story.fork == step:
            panel.buttons["fork"].click()
        ask = panel.story.waiting_for
        if ask is None or panel.story.next_step != step:
            panel.press(step)
            screen += "\n" + _on_screen(panel)
            continue
        screen += "\n" + _on_screen(panel)
        right = panel.story.expected(step)
        for choice in (c for c in ask.choices if c != right):
            panel.press(step, choice)
            assert not panel.last_ok and panel.story.missed, panel.last_message
            screen += "\n" + _on_screen(panel)
        panel.press(step, right)
        assert panel.last_ok, panel.last_message
        seen.append((step, screen, panel.last_message))
        screen += "\n" + _on_screen(panel)
    return seen


@pytest.mark.parametrize(("fence", "branch"), [(True, False), (False, False), (True, True)],
                         ids=["fence on", "fence off", "A wakes first"])
def test_no_prediction_is_answered_before_it_is_asked(fence: bool, branch: bool) -> None:
    panel = TwoWorkersStory(connection.connect(fresh=True), "no-answer-first", lease_ms=60,
                            fence=fence)
    path = tw.BRANCHED_NAMES if branch else tw.STEP_NAMES
    played = _play(panel, path)
    assert [s for s, _, _ in played] == [s for s in path if s in tw.PREDICTIONS]
    intro = _story_intro()
    for step, before, verdict in played:
        patterns = PREDICTS.get((step, fence)) or PREDICTS[(step, True)]
        assert stating(patterns, verdict), f"{step}: not recognised in its verdict: {verdict}"
        for where, text in (("the page above the story", intro), ("the panel", before)):
            said = stating(patterns, text)
            assert not said, f"{step} (fence {fence}) is answered in {where}: {said[:3]}"


def test_a_wrong_guess_at_bs_token_leaves_a_wakes_first_open() -> None:
    panel = TwoWorkersStory(connection.connect(fresh=True), "no-answer-first-fork",
                            lease_ms=60)
    for step in tw.STEP_NAMES[:3]:
        panel.press(step)
    panel.press("b_claims", "1")  # wrong: B's claim is taken, the pick is asked again
    assert panel.story.missed and panel.story.fork == tw.BRANCH[0]
    panel.buttons["fork"].click()
    assert panel.last_ok, panel.last_message
    assert panel.story.next_step == tw.BRANCH[0] and panel.story.waiting_for is not None
    panel.press(tw.BRANCH[0])
    panel.press(tw.LAB_BRANCH[0])
    assert panel.last_ok and panel.story.next_step == "b_claims"
