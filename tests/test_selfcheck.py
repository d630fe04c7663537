"""Self-checks graded by the server: every check answers every choice on every backend.

Each choice must come back with a verdict and an explanation naming what the server did; each
check has at least one right and one wrong choice; the widget's buttons do what ``answer``
does, and ``reset`` returns it to the unanswered state with its queue empty.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import redis

from echomq_lab import checks
from echomq_lab.checks.observers import FACTS, OBSERVERS
from echomq_lab.checks.questions import QuestionsError, build, shipped_text
from echomq_lab.widgets import Reveal, SelfCheck
from tests.support.state import dump

#: The right choice of every check, as the protocol sheet states it.
EXPECTED = {
    "claim_fields": "state and attempts",
    "row_deleter": "complete",
    "fresh_row": "three fields: state=pending, attempts=0, payload",
    "id_field": "no: the id is the last part of the row's key",
    "mint_time": "inside the id: its first bits are the mint time",
    "after_reprocess": "3",
    "token_above": "refused EMQSTALE: only the row's own attempts holds the lease",
    "token_reaped": "refused EMQSTALE: the token matches, but it holds no lease",
    "payload_round_trip": "the same bytes, byte for byte",
    "payload_read": "no: scripts store it and hand it back; no decision depends on it",
}
#: How many checks each page asks, at least.
AT_LEAST = {0: 2, 1: 2, 2: 3, 3: 2}


def test_every_page_has_its_checks() -> None:
    for page, least in AT_LEAST.items():
        made = checks.for_page(page)
        assert len(made) >= least
        assert all(c.page == page for c in made)
    assert sorted(checks.FACTORIES) == sorted(EXPECTED)
    with pytest.raises(ValueError, match="no check called"):
        checks.get("nope")
    with pytest.raises(ValueError, match="no checks for page"):
        checks.for_page(9)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_choice_is_graded_by_the_server(conn: redis.Redis, key: str) -> None:
    panel = SelfCheck(conn, key)
    assert panel.question and len(panel.choices) >= 2
    verdicts = {}
    for choice in panel.choices:
        graded = panel.answer(choice)
        assert graded.choice == choice and graded.explanation.strip()
        assert "The server:" in graded.explanation and graded.did in graded.explanation
        assert graded.explanation.startswith("Right." if graded.right else "Not this one")
        verdicts[choice] = graded.right
    assert [c for c, right in verdicts.items() if right] == [EXPECTED[key]]
    assert sum(not r for r in verdicts.values()) >= 1


def test_the_buttons_answer_and_reset_starts_afresh(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, "token_above")
    unanswered = panel.text()
    assert unanswered.splitlines()[0] == f"Check yourself: {panel.question}"
    assert len(unanswered.splitlines()) == 1 + len(panel.choices)
    assert "Right" not in unanswered and "The server:" not in unanswered

    panel.buttons[0].click()  # accepted: wrong
    assert panel.graded is not None and not panel.graded.right
    assert panel.buttons[0].button_style == "danger" and panel.buttons[0].icon == "times"
    assert "Not this one" in panel.message.value and "emq-refused" in panel.message.value
    assert "(not right)" in panel.text() and "EMQSTALE" in panel.text()

    panel.buttons[1].click()  # EMQSTALE: right
    assert panel.graded is not None and panel.graded.right
    assert panel.buttons[1].button_style == "success" and panel.buttons[0].button_style == ""
    assert "✓ Right." in panel.message.value and "(right)" in panel.text()
    assert any(k.startswith(b"emq:{check-token-above}") for k in dump(conn))

    panel.again.click()
    assert panel.graded is None and panel.text() == unanswered
    assert panel.message.value == "" and all(b.button_style == "" for b in panel.buttons)
    assert not any(k.startswith(b"emq:{check-token-above}") for k in dump(conn))


def test_every_button_has_a_tooltip(conn: redis.Redis) -> None:
    for page in AT_LEAST:
        for panel in SelfCheck.page(conn, page):
            assert all(b.tooltip for b in [*panel.buttons, panel.again])


def test_an_unknown_choice_runs_nothing(conn: redis.Redis) -> None:
    panel = SelfCheck(conn, checks.fresh_row(), queue="mine")
    with pytest.raises(ValueError, match="is not one of the choices"):
        panel.answer("seven fields")
    assert dump(conn) == {}


def test_a_dead_server_is_one_line_on_the_panel() -> None:
    conn = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    panel = SelfCheck(conn, "fresh_row")
    panel.buttons[0].click()
    assert panel.graded is None and not panel.last_ok
    assert "Traceback" not in panel.message.value and "\n" not in panel.last_message
    assert panel.text().endswith(f"[refused] {panel.last_message}")


FRESH = """
import json
from echomq_lab import connect, checks
from echomq_lab.widgets import SelfCheck
conn = connect()
out = {}
for page in range(4):
    for panel in SelfCheck.page(conn, page):
        out[panel.check.key] = [[c, panel.answer(c).right] for c in panel.choices]
print(json.dumps(out))
"""


def test_in_a_fresh_process_every_check_answers() -> None:
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=120, check=True)
    got = json.loads(done.stdout)
    assert sorted(got) == sorted(EXPECTED)
    for key, graded in got.items():
        assert [c for c, right in graded if right] == [EXPECTED[key]], key


def test_reveal_hides_the_answer_until_asked() -> None:
    reveal = Reveal("Why is token 1 stale?", "A later claim made attempts 2.", see="the fence")
    assert reveal.text() == "Why is token 1 stale?\n(answer hidden: press Show the answer)"
    assert reveal.body.value == "" and reveal.button.tooltip
    reveal.button.click()
    assert reveal.text().endswith("Answer: A later claim made attempts 2. (see the fence)")
    assert "attempts 2" in reveal.body.value and reveal.button.description == "Hide the answer"
    reveal.button.click()
    assert reveal.body.value == "" and not reveal.shown


# -- the questions are data: questions.toml, joined to the observers at import ----------------

ONE = """
[[checks]]
key = "token_above"
page = 2
observer = "complete_sample"
params = { lease = "held", token = "future" }
question = "Token 3 against attempts 2: what does the server say?"
answers = [
    { when = "EMQSTALE", text = "it refuses the token as stale" },
    { when = "accepted", text = "it takes it" },
]
lesson = "Equality, not order."
"""


def test_the_shipped_file_makes_the_checks() -> None:
    made = build(OBSERVERS, FACTS, shipped_text())
    assert [c.key for c in made] == [c.key for c in checks.CHECKS] == list(checks.FACTORIES)
    assert [(c.question, c.choices, c.lesson) for c in made] == [
        (c.question, c.choices, c.lesson) for c in checks.CHECKS]
    assert checks.token_above() is checks.get("token_above") and checks.token_above.__doc__
    assert f"{len(checks.BINARY)} bytes" in checks.payload_round_trip().question


def test_reworded_and_reordered_choices_grade_the_same(conn: redis.Redis) -> None:
    (check,) = build({"complete_sample": OBSERVERS["complete_sample"]}, FACTS, ONE)
    assert check.choices == ("it refuses the token as stale", "it takes it")
    graded = check.grade(conn, "edited", check.choices[0])
    assert graded.right and graded.explanation.endswith("Equality, not order.")
    assert not check.grade(conn, "edited", "it takes it").right


@pytest.mark.parametrize(("edit", "message"), [
    (('observer = "complete_sample"', 'observer = "nope"'), "no observer called 'nope'"),
    (('lease = "held"', 'lease = "gone"'), "lease = 'gone' is not one of"),
    (('lease = "held"', 'lag = "held"'), "does not take these params"),
    (('when = "accepted"', 'when = "EMQSTALE"'), "no other choice of the question uses"),
    (("page = 2\n", ""), "missing ['page']"),
    (("page = 2\n", "page = 2\nhint = 1\n"), "unknown ['hint']"),
    (("Token 3", "Token {three}"), "cannot fill in"),
    (("[[checks]]", "[[check]]"), "[[checks]] entries and nothing else"),
])
def test_a_mistake_in_the_file_is_one_line_naming_it(edit: tuple[str, str], message: str) -> None:
    text = ONE.replace(*edit)
    assert text != ONE
    with pytest.raises(QuestionsError) as caught:
        build({"complete_sample": OBSERVERS["complete_sample"]}, FACTS, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_observer_without_a_question_is_refused() -> None:
    with pytest.raises(QuestionsError, match="no question uses the observer fresh_row"):
        build({"complete_sample": OBSERVERS["complete_sample"],
               "fresh_row": OBSERVERS["fresh_row"]}, FACTS, ONE)
    with pytest.raises(QuestionsError, match="share the key token_above"):
        build(OBSERVERS, FACTS, shipped_text() + ONE)
