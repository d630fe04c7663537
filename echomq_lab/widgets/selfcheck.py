"""SelfCheck: a question the reader answers by clicking a choice; the server grades it.

API (for pages)::

    from echomq_lab.widgets import SelfCheck
    c = SelfCheck(conn, "token_above")      # a check by its key in questions.toml
    SelfCheck.page(conn, 2)                 # the page's checks, one panel each (a list)
    c.question, c.choices                   # as shown
    c.answer(c.choices[1])                  # -> checks.Graded: .right, .explanation
    c.reset()                               # unanswered again, its queue emptied
    c.buttons[i].click()                    # the same as answer(choices[i]), shown on the panel
    c.text()                                # plain text; unanswered: question and choices only

The page introduces a check in its own words ("Check yourself"); the panel asks the question.
Each check runs on a queue of its own (``check-<key>``, or ``queue=``), emptied before each
answer. A wrong answer says what the server did against that choice and gives a hint; every
choice stays open, so the reader answers again at once. The verdict is in words ("Right." /
"Not this one"), never in colour alone.

Answers to a page's open questions need no widget: a collapsed ``<details>`` block in the
page's markdown (``<details><summary>Show the answer</summary> ... </details>``) opens on a
click in JupyterLab and Voilà and stays closed in the stored page. :class:`Reveal` is there for
an answer that must be built in Python.
"""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import checks
from echomq_lab import theme as style
from echomq_lab.queues import reset
from echomq_lab.widgets.base import Panel

_LETTERS = "abcdefgh"


class SelfCheck(Panel):
    """A question with one button per choice; a click runs the check and shows its verdict."""

    def __init__(
        self, conn: redis.Redis, check: checks.Check | str, *, queue: str | None = None
    ) -> None:
        self.conn = conn
        self.check = checks.get(check) if isinstance(check, str) else check
        self.queue = queue or self.check.queue
        self.graded: checks.Graded | None = None
        self.prompt = W.HTML(
            f"<b>{html.escape(self.question)}</b> "
            f'<span style="color:{style.SOFT}">Pick one: the server decides.</span>'
        )
        self.buttons = [self._button(i, c) for i, c in enumerate(self.choices)]
        self.message = W.HTML(layout=W.Layout(margin="4px 0 0 0"))
        # The margin below keeps the verdict apart from whatever the page shows next.
        self.widget = W.VBox([self.prompt, *self.buttons, self.message],
                             layout=W.Layout(margin="0 0 1.5em 0"))
        self.widget.add_class("emq-selfcheck")

    @classmethod
    def page(cls, conn: redis.Redis, page: int | str) -> list[SelfCheck]:
        """One panel for each check of page ``page`` (its number or file), in page order."""
        return [cls(conn, c) for c in checks.for_page(page)]

    def _button(self, index: int, choice: str) -> W.Button:
        button = W.Button(
            description=f"({_LETTERS[index]}) {choice}",
            tooltip=f"Answer “{choice}”: the server runs the transitions and grades it",
            layout=W.Layout(width="auto", max_width="100%"),
        )
        button.on_click(lambda _b: self._clicked(choice))
        return button

    @property
    def question(self) -> str:
        """The question, as shown."""
        return self.check.question

    @property
    def choices(self) -> list[str]:
        """The choices, as shown (without their letters)."""
        return list(self.check.choices)

    def answer(self, choice: str) -> checks.Graded:
        """Grade ``choice`` by running the check on the server; show and return the verdict.

        ValueError for a choice that is not offered (nothing runs). Any choice may be answered
        next, straight away.
        """
        graded = self.check.grade(self.conn, self.queue, choice)
        self.graded = graded
        self._say(self.message, graded.explanation, ok=graded.right)
        for text, button in zip(self.choices, self.buttons, strict=True):
            picked = text == choice
            button.button_style = ("success" if graded.right else "danger") if picked else ""
            button.icon = ("check" if graded.right else "times") if picked else ""
        return graded

    def _clicked(self, choice: str) -> None:
        """A choice button: grade it; a server that cannot be reached is one line, no trace."""
        try:
            self.answer(choice)
        except Exception as exc:  # noqa: BLE001 - a click never ends in a traceback
            self.graded = None
            self._say(self.message, style.one_line(exc), ok=False)

    def reset(self) -> None:
        """Unanswered again: no verdict, no marked button, and the check's queue emptied."""
        self.graded = None
        self.last_message, self.last_ok = "", True
        self.message.value = ""
        for button in self.buttons:
            button.button_style, button.icon = "", ""
        reset(self.conn, self.queue)

    def text(self) -> str:
        """The question and the choices; once answered, the choice and the verdict too."""
        lines = [f"Question: {self.question}"]
        lines += [f"  ({_LETTERS[i]}) {c}" for i, c in enumerate(self.choices)]
        if self.graded is not None:
            word = "right" if self.graded.right else "not right"
            lines += [f"Your answer: {self.graded.choice} ({word})", self.graded.explanation]
        elif self.last_message:
            lines.append(f"[refused] {self.last_message}")
        return "\n".join(lines)


class Reveal(Panel):
    """A question whose answer stays hidden until the reader presses "Show the answer"."""

    def __init__(self, question: str, answer: str, *, see: str = "") -> None:
        self.question, self.answer_text, self.see = question, answer, see
        self.shown = False
        self.button = W.Button(
            description="Show the answer", icon="eye", layout=W.Layout(width="auto"),
            tooltip="Show the answer to this question (try it on the panel first)",
        )
        self.button.on_click(lambda _b: self.toggle())
        self.body = W.HTML()
        self.widget = W.VBox([W.HTML(f"<b>{html.escape(question)}</b>"), self.button, self.body])
        self.widget.add_class("emq-reveal")

    def toggle(self) -> None:
        """Show the answer, or hide it again."""
        self.shown = not self.shown
        self.button.description = "Hide the answer" if self.shown else "Show the answer"
        see = f" <i>(see {html.escape(self.see)})</i>" if self.see and self.shown else ""
        self.body.value = f"<div>{html.escape(self.answer_text)}{see}</div>" if self.shown else ""

    def text(self) -> str:
        """The question; the answer only once revealed."""
        if not self.shown:
            return f"{self.question}\n(answer hidden: press Show the answer)"
        see = f" (see {self.see})" if self.see else ""
        return f"{self.question}\nAnswer: {self.answer_text}{see}"
