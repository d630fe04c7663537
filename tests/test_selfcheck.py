"""Self-checks graded by the server: every choice of every check, on every backend.

The pages come from ``tools/pages.toml``: each check names its page by the page's slug there,
and the course's pages (the hub and its pages) each ask at least two. Answered by a program,
every check has exactly one right choice, and keeps three rules: a wrong answer's text does
not contain the right answer (its choice, nor the server's outcome that names it); the right
answer is accepted straight after a wrong one; no choice is longer than 48 characters. The
widget's buttons do what ``answer`` does, and ``reset`` returns it to the unanswered state with
its queue empty.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest
import redis

from echomq_lab.lessons import checks
from echomq_lab.widgets import SelfCheck
from tools.course import load as course_pages

PAGES = course_pages()
#: The pages that ask self-checks, by slug, in reading order.
ASKING = [p.slug for p in PAGES if p.slug in checks.pages()]
#: The right choice of the course's checks, as the protocol sheet states it (a check added
#: later is graded by the server alone).
EXPECTED = {
    "claim_fields": "state and attempts",
    "row_deleter": "complete",
    "fresh_row": "state, attempts and payload",
    "id_field": "no, the id is only in the key",
    "mint_time": "inside the job's id",
    "after_reprocess": "4",
    "token_above": "refused with EMQSTALE",
    "token_reaped": "refused with EMQSTALE",
    "payload_round_trip": "the same bytes",
    "payload_read": "no, none of them",
}


def _keys(conn: redis.Redis, queue: str) -> list[bytes]:
    return list(conn.scan_iter(match=f"emq:{{{queue}}}:*"))


def _names(text: str, answer: str) -> bool:
    """True when ``answer`` appears in ``text`` as whole words, case ignored."""
    return re.search(rf"(?<![\w]){re.escape(answer)}(?![\w])", text, re.I) is not None


def test_every_check_belongs_to_a_page_of_the_list() -> None:
    order = [p.slug for p in PAGES]
    assert set(checks.pages()) <= set(order)
    places = [order.index(c.page) for c in checks.CHECKS]
    assert places == sorted(places), "questions.toml lists the checks in reading order"
    for page in PAGES:
        if page.kind in ("hub", "page"):
            asked = len([c for c in checks.CHECKS if c.page == page.slug])
            assert asked >= 2, (
                f"{page.slug} asks {asked} self-check(s): a course page (the hub, or kind = "
                f'"page" in tools/pages.toml) asks at least two; add [[checks]] entries with '
                f'page = "{page.slug}" to {checks.QUESTIONS} (docs/authoring.md, "Self-checks")')
    assert set(EXPECTED) <= {c.key for c in checks.CHECKS}
    with pytest.raises(ValueError, match="no check called"):
        checks.get("nope")


@pytest.mark.parametrize("page", ["story", "lab-two-workers-one-job", "03-the-payload.ipynb"])
def test_a_page_that_asks_nothing_is_one_line_naming_those_that_do(page: str) -> None:
    with pytest.raises(ValueError) as caught:
        SelfCheck.page(redis.Redis(), page)
    said = str(caught.value)
    assert said.startswith(f"no page called {page!r} asks self-checks") and "\n" not in said
    assert said.endswith(", ".join(ASKING))


def test_a_page_is_named_by_its_slug_not_its_number() -> None:
    assert [c.key for c in checks.for_page("the-payload")] == ["payload_round_trip",
                                                               "payload_read"]
    for number in (3, 2.0):
        with pytest.raises(TypeError, match="page must be the page's name, e.g. 'the-payload'"):
            checks.for_page(number)  # type: ignore[arg-type]


@pytest.mark.parametrize("page", ASKING)
def test_the_three_rules_hold_when_a_program_answers(conn: redis.Redis, page: str) -> None:
    for check in checks.for_page(page):
        panel = SelfCheck(conn, check)
        assert all(len(c) <= 48 for c in panel.choices), panel.choices
        outcome = check.observe(conn, panel.queue).outcome
        assert outcome in check.outcomes, (check.key, outcome)
        right = check.choices[check.outcomes.index(outcome)]
        for wrong in (c for c in panel.choices if c != right):
            graded = panel.answer(wrong)
            assert not graded.right, (check.key, wrong)
            for answer in (right, outcome):
                assert not _names(graded.explanation, answer), (
                    f"{check.key}: the verdict on {wrong!r} gives away {answer!r}: "
                    f"{graded.explanation}")
            assert "Hint:" in graded.explanation and graded.did not in graded.explanation
            again = panel.answer(right)
            assert again.right, f"{check.key}: {right!r} refused straight after {wrong!r}"


@pytest.mark.parametrize("key", [c.key for c in checks.CHECKS])
def test_each_choice_is_graded_by_the_server(conn: redis.Redis, key: str) -> None:
    panel = SelfCheck(conn, key)
    assert panel.question and len(panel.choices) >= 2
    verdicts = {}
    for choice in panel.choices:
        graded = panel.answer(choice)
        assert graded.choice == choice and graded.explanation.strip()
        if graded.right:
            assert graded.explanation.startswith("Right. The server: ")
            assert graded.did in graded.explanation
        else:
            assert graded.explanation.startswith("Not this one. The server: ")
        verdicts[choice] = graded.right
    rights = [c for c, right in verdicts.items() if right]
    assert len(rights) == 1 and rights[0] == EXPECTED.get(key, rights[0]), verdicts


def test_the_buttons_answer_and_reset_starts_afresh(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, "token_above")
    unanswered = panel.text()
    assert unanswered.splitlines()[0] == f"Question: {panel.question} (asked of {panel.rule})"
    assert len(unanswered.splitlines()) == 1 + len(panel.choices)
    assert "Check yourself" not in unanswered + panel.prompt.value, "the page says it, once"
    assert "Right" not in unanswered and "The server:" not in unanswered

    panel.buttons[0].click()  # accepted: wrong
    assert panel.graded is not None and not panel.graded.right
    assert panel.buttons[0].button_style == "danger" and panel.buttons[0].icon == "times"
    assert "Not this one" in panel.message.value and "emq-refused" in panel.message.value
    assert "(not right)" in panel.text() and "EMQSTALE" not in panel.graded.explanation

    panel.buttons[1].click()  # EMQSTALE: right, straight after the wrong one
    assert panel.graded is not None and panel.graded.right
    assert panel.buttons[1].button_style == "success" and panel.buttons[0].button_style == ""
    assert "✓ Right." in panel.message.value and "(right)" in panel.text()
    assert _keys(conn, panel.queue)

    panel.reset()
    assert panel.graded is None and panel.text() == unanswered
    assert panel.message.value == "" and all(b.button_style == "" for b in panel.buttons)
    assert not _keys(conn, panel.queue)


def test_a_press_shows_at_once_that_it_was_taken(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, "fresh_row")
    seen: list[tuple[bool, str, bool]] = []

    def look(change: dict[str, object]) -> None:  # what the browser is sent, as it is sent
        seen.append((panel.buttons[1].disabled, str(change["new"]), panel.busy))

    panel.message.observe(look, names="value")
    panel.buttons[1].click()
    first = seen[0]
    # busy and said at once; the pressed button is never disabled, so it keeps the focus
    assert not first[0] and first[2] and "running…" in first[1]
    assert "emq-busy" not in panel.widget._dom_classes and not panel.buttons[1].disabled
    assert panel.graded is not None and "running…" not in panel.message.value
    assert panel.focused is panel.buttons[1]  # the focus stays on the pressed choice
    assert 'role="status"' in panel.message.value and 'aria-live="polite"' in panel.message.value


def test_every_check_names_the_rule_it_asks_about(conn: redis.Redis) -> None:
    """A check under the lab's rule says so in its question; a check whose story completes
    under the course's rule runs the course's complete (the token against attempts only), and
    under the lab's the lab's: the expected answer is true under the rule the reader is told."""
    for check in checks.CHECKS:
        assert check.rule in checks.RULES
        panel = SelfCheck(conn, check)
        assert html.escape(checks.RULES[check.rule]) in panel.prompt.value
        if check.rule == "lab":
            assert "the lab's" in check.question.lower(), check.key
    reaped = checks.get("token_reaped")
    assert reaped.rule == "lab" and reaped.observe(conn, "rule-lab").outcome == "EMQSTALE"
    # the same story under the course's rule: the course's complete accepts the call
    course = checks.build(checks.OBSERVERS, checks.FACTS,
                          checks.shipped_text().replace('rule = "lab"\n', ""))
    as_course = next(c for c in course if c.key == "token_reaped")
    assert as_course.rule == "course" and as_course.observe(conn, "rule-c").outcome == "accepted"


def test_claim_fields_refutes_without_naming_a_field(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, "claim_fields")
    for choice in ("state only", "attempts only", "all three"):
        said = panel.answer(choice).explanation.split(" Hint:")[0]
        assert not re.search(r"\b(state|attempts|payload)\b", said.split("The server: ")[1]), said


def test_the_verdict_keeps_its_distance_from_what_follows(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, "fresh_row")
    assert panel.widget.layout.margin and panel.widget.layout.margin.split()[2] != "0"
    assert panel.widget.children[-1] is panel.message


@pytest.mark.host
def test_every_button_has_a_tooltip(conn: redis.Redis) -> None:
    for page in ASKING:
        for panel in SelfCheck.page(conn, page):
            assert all(b.tooltip for b in panel.buttons)


@pytest.mark.host
def test_an_unknown_choice_runs_nothing(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, checks.get("fresh_row"), queue="mine")
    with pytest.raises(ValueError, match="is not one of the choices"):
        panel.answer("seven fields")
    assert not _keys(conn, "mine")


def test_a_dead_server_is_one_line_on_the_panel() -> None:
    conn = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    panel = SelfCheck(conn, "fresh_row")
    panel.buttons[0].click()
    assert panel.graded is None and not panel.last_ok
    assert "Traceback" not in panel.message.value and "\n" not in panel.last_message
    assert panel.text().endswith(f"[refused] {panel.last_message}")


FRESH = """
import json, sys
from echomq_lab import connect
from echomq_lab.widgets import SelfCheck
conn = connect()
out = {}
for page in sys.argv[1:]:
    for panel in SelfCheck.page(conn, page):
        out[panel.check.key] = [[c, panel.answer(c).right] for c in panel.choices]
print(json.dumps(out))
"""


def test_in_a_fresh_process_every_check_answers() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH, *ASKING], capture_output=True,
                          text=True, timeout=120, check=True)
    got = json.loads(done.stdout)
    assert sorted(got) == sorted(c.key for c in checks.CHECKS)
    for key, graded in got.items():
        assert [c for c, _ in graded] == list(checks.get(key).choices), key
        assert all(isinstance(right, bool) for _, right in graded), key


# -- the questions are data: questions.toml, joined to the observers at load ---------------------

ONE = """
[[checks]]
key = "token_above"
page = "a-page-far-on"
observer = "story"
params = { steps = ["claim briefly", "expire", "reap", "claim", "complete future"], ask = "reply" }
question = "Token 3 against attempts 2: what does the server say?"
answers = [
    { when = "EMQSTALE", text = "it refuses the token as stale" },
    { when = "accepted", text = "it takes it" },
]
hint = "Newer or the same?"
lesson = "Equality, not order."
"""
SAMPLE = {"story": checks.OBSERVERS["story"]}


def test_the_shipped_file_makes_the_checks() -> None:
    made = checks.build()
    assert [(c.key, c.page, c.question, c.choices, c.hint, c.lesson) for c in made] == [
        (c.key, c.page, c.question, c.choices, c.hint, c.lesson) for c in checks.CHECKS]
    assert f"{len(checks.BINARY)} bytes" in checks.get("payload_round_trip").question


def test_a_check_works_on_any_page(conn: redis.Redis) -> None:
    (check,) = checks.build(SAMPLE, checks.FACTS, ONE)
    assert check.page == "a-page-far-on"
    assert check.choices == ("it refuses the token as stale", "it takes it")
    graded = check.grade(conn, "edited", check.choices[0])
    assert graded.right and graded.explanation.endswith("Equality, not order.")
    wrong = check.grade(conn, "edited", "it takes it")
    assert not wrong.right and wrong.explanation.endswith("Hint: Newer or the same?")
    assert not _names(wrong.explanation, "it refuses the token as stale")


@pytest.mark.parametrize(("edit", "message"), [
    (('observer = "story"', 'observer = "nope"'), "no observer called 'nope'"),
    (('ask = "reply"', 'ask = "mood"'), "ask = 'mood' is not one of"),
    (('ask = "reply"', 'lag = "reply"'), "does not take these params"),
    (('when = "accepted"', 'when = "EMQSTALE"'), "no other choice of the question uses"),
    (('hint = "Newer or the same?"\n', ""), "missing ['hint']"),
    (('hint = "', 'tip = 1\nhint = "'), "unknown ['tip']"),
    (('"a-page-far-on"', "12"), "page must be the page's slug"),
    (('"a-page-far-on"', '"12-a-page-far-on.ipynb"'), "page must be the page's slug"),
    (("it takes it", "it takes it, since a higher token is always newer"), "at most 48"),
    (("it takes it", "yes: newer wins"), "no reason after a colon"),
    (("Token 3", "Token {three}"), "cannot fill in"),
    (("[[checks]]", "[[check]]"), "[[checks]] entries and nothing else"),
])
def test_a_mistake_in_the_file_is_one_line_naming_it(edit: tuple[str, str], message: str) -> None:
    text = ONE.replace(*edit)
    assert text != ONE
    with pytest.raises(checks.QuestionsError) as caught:
        checks.build(SAMPLE, checks.FACTS, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


STORY = """
[[checks]]
key = "late_worker"
page = "a-page-of-its-own"
observer = "story"
params = { steps = ["claim briefly", "expire", "reap", "claim", "complete stale"], ask = "reply" }
question = "Reaped and claimed again; the first worker completes. What does it get?"
answers = [
    { when = "accepted", text = "accepted" },
    { when = "EMQSTALE", text = "refused as stale" },
]
hint = "Who holds the lease now?"
lesson = "The first worker's token is one behind the row's attempts."
"""


def test_a_story_written_in_the_file_is_graded_by_the_server(conn: redis.Redis) -> None:
    (check,) = checks.build({"story": checks.OBSERVERS["story"]}, checks.FACTS, STORY)
    assert check.page == "a-page-of-its-own"
    assert check.grade(conn, "story", "refused as stale").right
    wrong = check.grade(conn, "story", "accepted")
    assert not wrong.right and not _names(wrong.explanation, "refused as stale")
    # the step reads in a learner's words: the verb and the stale token it sent
    assert "after complete with token 1" in wrong.explanation and "stale" not in wrong.explanation
    for ask, seen in (("state", "active"), ("attempts", "2"), ("token", "2"),
                      ("fields", "attempts payload state")):
        (asked,) = checks.build({"story": checks.OBSERVERS["story"]}, checks.FACTS,
                                STORY.replace('ask = "reply"', f'ask = "{ask}"'))
        assert asked.observe(conn, "story").outcome == seen, ask
    with pytest.raises(checks.QuestionsError, match="steps = 'sleep' is not one of"):
        checks.build(checks.OBSERVERS, checks.FACTS, STORY.replace('"expire"', '"sleep"'))


def test_an_observer_without_a_question_is_refused() -> None:
    with pytest.raises(checks.QuestionsError, match="no question uses the observer row_deleter"):
        checks.build({**SAMPLE, "row_deleter": checks.OBSERVERS["row_deleter"]}, checks.FACTS,
                     ONE)
    with pytest.raises(checks.QuestionsError, match="share the key token_above"):
        checks.build(checks.OBSERVERS, checks.FACTS, checks.shipped_text() + ONE)


def test_a_verdict_that_would_give_the_answer_away_says_less() -> None:
    def observe(_conn: redis.Redis, _queue: str) -> checks.Observed:
        return checks.Observed("yes", "it did", lambda when: "the answer was yes")

    check = checks.Check("k", "p", "Q?", ("yes", "no"), ("yes", "no"), observe,
                         "look again", "L.")
    graded = check.grade(redis.Redis(), "q", "no")
    assert graded.explanation == "Not this one: the server did not do that. Hint: look again"
