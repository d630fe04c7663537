"""SelfCheck: a question (by its key in ``questions.toml``; or all of a page's, by the page's
slug) the reader answers by clicking a choice; the server grades it on a queue of the check's
own, emptied before each answer. A wrong answer says what the server did; every choice stays
open; the verdict is in words."""

from __future__ import annotations

import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab.lessons import checks
from echomq_lab.queues import reset
from echomq_lab.widgets import look as style
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
            f'<span style="color:{style.SOFT}">Asked of {html.escape(self.rule)}. Pick one: '
            "the server decides.</span>"
        )
        self.buttons = [self._button(i, c) for i, c in enumerate(self.choices)]
        self.message = W.HTML(layout=W.Layout(margin="4px 0 0 0"))
        # The margin below keeps the verdict apart from whatever the page shows next.
        self.widget = W.VBox([self.prompt, *self.buttons, self.message],
                             layout=W.Layout(margin="0 0 1.5em 0"))
        self.widget.add_class("emq-selfcheck")

    @classmethod
    def page(cls, conn: redis.Redis, page: str) -> list[SelfCheck]:
        """One panel for each check of the page called ``page`` (its slug, e.g.
        ``"the-payload"``), in page order. ValueError (one line, naming the pages that ask
        checks) for a name no check gives; TypeError for anything but a string."""
        return [cls(conn, c) for c in checks.for_page(page)]

    def _button(self, index: int, choice: str) -> W.Button:
        button = W.Button(
            description=f"({_LETTERS[index]}) {choice}",
            tooltip=f"Answer “{choice}”: the server runs the transitions and grades it",
            layout=W.Layout(width="auto", max_width="100%"),
        )
        def pressed(_button: W.Button) -> None:
            with self._pressing(button, self.message):
                self._clicked(choice)

        button.on_click(pressed)
        return button

    @property
    def question(self) -> str:
        return self.check.question

    @property
    def rule(self) -> str:
        """Whose rule the question asks about, in words."""
        return checks.RULES[self.check.rule]

    @property
    def choices(self) -> list[str]:
        """The choices, as shown (without their letters)."""
        return list(self.check.choices)

    def answer(self, choice: str) -> checks.Graded:
        """Grade ``choice`` by running the check on the server; show and return the verdict.
        ValueError for a choice that is not offered (nothing runs)."""
        graded = self.check.grade(self.conn, self.queue, choice)
        self.graded = graded
        self._say(self.message, graded.explanation, ok=graded.right)
        for text, button in zip(self.choices, self.buttons, strict=True):
            picked = text == choice
            button.button_style = ("success" if graded.right else "danger") if picked else ""
            button.icon = ("check" if graded.right else "times") if picked else ""
        return graded

    def _clicked(self, choice: str) -> None:
        self.graded = None
        self._attempt(self.message, lambda: self.answer(choice))

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
        lines = [f"Question: {self.question} (asked of {self.rule})"]
        lines += [f"  ({_LETTERS[i]}) {c}" for i, c in enumerate(self.choices)]
        if self.graded is not None:
            word = "right" if self.graded.right else "not right"
            lines += [f"Your answer: {self.graded.choice} ({word})", self.graded.explanation]
        elif self.last_message:
            lines.append(f"[refused] {self.last_message}")
        return "\n".join(lines)
