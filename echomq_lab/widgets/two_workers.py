"""TwoWorkersStory: two workers, one job, played on a live timeline with a prediction before
each reveal.

The story is :class:`echomq_lab.two_workers.TwoWorkersStory`; this panel draws it. A and B are
lanes: what each did, and its lease as a bar that drains on the server's clock, redrawn by a
front-end timer (:class:`echomq_lab.widgets.ticker.Ticker`, no kernel thread). Beside them:
what A believes and what the server holds. Only the next step is offered; before B's claim and
before A's late complete the reader picks an answer first, and the step's outcome stays hidden
until then. Once A has claimed, its lease runs out on screen with no further click, and the
stall is taken when the server's clock passes A's deadline.

A fence switch replays the story with A's late complete going through the unfenced
demonstration script; the last finished run of each setting is shown side by side.
"""

from __future__ import annotations

import functools
import html

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import jobs, unfenced
from echomq_lab import theme as style
from echomq_lab.clock import lease_deadline, server_now_ms
from echomq_lab.row import Row
from echomq_lab.stories import DEFAULT_LEASE_MS, HOLD_MS
from echomq_lab.two_workers import (
    ACCEPTED,
    GONE,
    PREDICTIONS,
    PROGRAM_GUESSES,
    STALE,
    STEPS,
    NotYet,
    StepResult,
)
from echomq_lab.two_workers import TwoWorkersStory as Story
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.sets_view import span
from echomq_lab.widgets.ticker import Ticker

#: The short label of each step's button (the stall has none: the clock takes it).
BUTTON_LABELS: dict[str, str] = {
    "a_claims": "A claims",
    "a_stalls": "A stalls",
    "reaper_returns": "run the reaper",
    "b_claims": "B claims",
    "a_completes": "A completes",
    "b_completes": "B completes",
}
#: The prompt beside the next step: what to do or watch, never what will happen.
PROMPTS: dict[str, str] = {
    "a_claims": "One job is pending. A takes it with a short lease.",
    "a_stalls": "A has stopped answering (a long pause, a slow disk). Watch A's lease.",
    "reaper_returns": "A still believes it holds the job. Compare with what the server holds, "
                      "then run the reaper.",
    "b_claims": "B is free and asks for work.",
    "a_completes": "A wakes up, unaware of all this, and reports its work done.",
    "b_completes": "B finishes its work.",
}
#: Why the server answered as it did, shown once the step is taken.
WHY: dict[str, str] = {
    "b_claims": "claim adds one to attempts and hands the new value out as the token; the "
                "reaper never touched attempts.",
    STALE: "complete compares A's token with the row's attempts; they differ, so nothing "
           "was written.",
    ACCEPTED: "this complete reads no token: the row and B's lease are deleted under B.",
}
#: Width of a lease bar, in px.
BAR_PX = 160


def _bar(left_ms: int | None, lease_ms: int, gone: str = "") -> str:
    """A lease bar: filled in proportion to the time left, and the time left in words."""
    if left_ms is None:
        return f'<span style="color:{style.SOFT}">{html.escape(gone or "no lease")}</span>'
    frac = max(0.0, min(1.0, left_ms / lease_ms))
    colour = style.SET_COLOURS["active"] if left_ms > 0 else style.REFUSED_TEXT
    words = f"lease: {span(left_ms)} left" if left_ms > 0 else f"lease ran out {span(-left_ms)} ago"
    return (
        f'<span class="emq-lease-bar" role="meter" aria-valuenow="{max(0, left_ms)}" '
        f'aria-valuemin="0" aria-valuemax="{lease_ms}" aria-label="{html.escape(words)}" '
        f'style="display:inline-block;vertical-align:middle;width:{BAR_PX}px;height:12px;'
        f'border:1px solid {colour};border-radius:3px;margin:0 6px">'
        f'<span style="display:block;height:100%;width:{frac * 100:.1f}%;background:{colour}">'
        f'</span></span><span style="white-space:nowrap">{html.escape(words)}</span>'
    )


def _chip(text: str, ok: bool | None = None) -> str:
    colour = style.INK_ON_PAGE if ok is None else style.OK_TEXT if ok else style.REFUSED_TEXT
    mark = "" if ok is None else " ✓" if ok else " ✗"
    return (f'<span style="display:inline-block;border:1px solid {style.SOFT};border-radius:'
            f'10px;padding:0 8px;margin:1px 4px 1px 0;color:{colour}">'
            f"{html.escape(text)}{mark}</span>")


class TwoWorkersStory(Panel):
    """The two-workers story as an explorable panel.

    ``buttons[<step>]`` take the next step (the one for ``a_stalls`` is never shown: the live
    clock takes that step; a program that presses it waits for A's deadline);
    ``choices[<step>]`` hold the answer buttons of the two predictions; ``buttons["restart"]``
    starts again; ``fence`` is the on/off switch; ``buttons["other"]`` plays the other setting
    through for the reader.
    :meth:`tick` is one beat of the live clock (the front end calls it; tests may too);
    :meth:`press` takes a step as a reader would, predicting first when the step asks.
    Construction starts the story: one job is enqueued.
    """

    def __init__(
        self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS,
        fence: bool = True,
    ) -> None:
        self.conn, self.queue = conn, queue
        self.story = Story(conn, queue, lease_ms=lease_ms, fence=fence)
        self.runs: dict[bool, str] = {}
        self.buttons: dict[str, W.Button] = {}
        for step, title in STEPS:
            button = W.Button(description=BUTTON_LABELS[step], tooltip=title,
                              button_style="primary", layout=W.Layout(width="auto"))
            self._on(button, functools.partial(self._step, step))
            self.buttons[step] = button
        self.buttons["restart"] = W.Button(description="start again", icon="refresh",
                                           layout=W.Layout(width="auto"))
        self._on(self.buttons["restart"], self._restart)
        self.buttons["other"] = W.Button(description="play the other setting for me",
                                         icon="forward", layout=W.Layout(width="auto"))
        self._on(self.buttons["other"], self._play_other)
        self.choices: dict[str, list[W.Button]] = {}
        for step, ask in PREDICTIONS.items():
            self.choices[step] = []
            for choice in ask.choices:
                button = W.Button(description=choice, layout=W.Layout(width="auto"))
                self._on(button, functools.partial(self._predict, step, choice))
                self.choices[step].append(button)
        self.fence = W.ToggleButtons(
            options=[("fence on", True), ("fence off (demonstration)", False)], value=fence,
            description="complete:", tooltips=[
                "complete checks the token and the lease (the protocol)",
                f"A's late complete goes through the {unfenced.LABEL}"],
            style={"button_width": "auto"})
        self.fence.observe(self._on_fence, names="value")
        self.ticker = Ticker(self._guarded_tick)
        self.heading = W.HTML()
        self.lanes = W.HTML(layout=W.Layout(flex="1 1 540px"))
        self.beliefs = W.HTML(layout=W.Layout(flex="1 1 300px"))
        self.prompt = W.HTML()
        self.next_box = W.HBox(layout=W.Layout(flex_flow="row wrap", align_items="center"))
        self.message = W.HTML()
        self.log = W.HTML()
        self.side_by_side = W.HTML()
        self.widget = W.VBox([
            W.HBox([self.fence, self.buttons["restart"], self.ticker.widget],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            self.heading,
            W.HBox([self.lanes, self.beliefs], layout=W.Layout(flex_flow="row wrap")),
            self.prompt, self.next_box, self.message, self.log,
            W.HBox([self.buttons["other"]]), self.side_by_side,
        ])  # fmt: skip
        self.widget.add_class("emq-two-workers")
        self._restart()

    # -- actions ------------------------------------------------------------------------------

    def _restart(self) -> None:
        def act() -> str:
            job_id = self.story.start()
            return f"the story's job {job_id} is pending"

        self._safely(self.message, act)
        self._draw()

    def _on_fence(self, change: dict[str, object]) -> None:
        self.story.fence = bool(change["new"])
        self._guarded(self._restart)()

    def _predict(self, step: str, choice: str) -> None:
        def act() -> str:
            self.story.predict(step, choice)
            return f"you said: {choice}. Now let it happen."

        self._safely(self.message, act)
        self._draw()

    def _step(self, step: str) -> None:
        def act() -> str:  # the stall's button is never shown; a program pressing it waits
            return self.story.step(step, wait=step == "a_stalls").message

        if self._safely(self.message, act):
            result = self.story.done[-1]
            if result.refused:  # said in red, as the server did
                self._say(self.message, result.message, ok=False)
            if step == "a_claims":
                self.ticker.start()
            if self.story.next_step is None:
                self.runs[self.story.fence] = self.story.log_text()
        self._draw()

    def press(self, step: str, choice: str | None = None) -> str:
        """Take ``step`` as a reader would: when it asks for a prediction not yet made, click
        ``choice`` (by default the program's guess, :data:`PROGRAM_GUESSES`) first; then click
        the step's button. Return the message line."""
        ask = self.story.waiting_for
        if ask is not None and ask.step == step:
            wanted = choice if choice is not None else PROGRAM_GUESSES[step]
            for button in self.choices[step]:
                if button.description == wanted:
                    button.click()
        self.buttons[step].click()
        return self.last_message

    def _play_other(self) -> None:
        other = not self.story.fence

        def act() -> str:
            queue = f"{self.queue}-{'on' if other else 'off'}"
            story = Story(self.conn, queue, lease_ms=min(self.story.lease_ms, 1000), fence=other)
            self.runs[other] = story.run_through()
            return f"played the story with the fence {'on' if other else 'off'}, beside yours"

        self._safely(self.message, act)
        self._draw_side_by_side()

    def _guarded_tick(self) -> bool:
        keep = True

        def run() -> None:
            nonlocal keep
            keep = self.tick()

        self._guarded(run)()
        return keep and self.last_error is None

    def tick(self) -> bool:
        """One beat of the live clock: take the stall once A's deadline has passed on the
        server's clock, and redraw the lanes; False when nothing is left to watch."""
        if self.story.next_step == "a_stalls":
            try:
                self.story.step("a_stalls", wait=False)
                self._say(self.message, self.story.done[-1].message, ok=True)
            except NotYet:
                pass
            self._draw()
        else:
            self._draw_live()
        return self.story.next_step is not None and self.story.token_a is not None

    # -- drawing ------------------------------------------------------------------------------

    def _draw(self) -> None:
        story = self.story
        self.heading.value = (
            f"<b>{html.escape(story.heading())}</b>" if story.fence else
            f'<b style="color:{style.REFUSED_TEXT}">{html.escape(story.heading())}</b>')
        nxt = story.next_step
        ask = story.waiting_for
        if nxt is None:
            self.prompt.value = (f"<b>{html.escape(story.verdict())}</b> Switch the fence and "
                                 "play again, or start again." if story.done else "")
            self.next_box.children = ()
        elif ask is not None:
            self.prompt.value = (f"{html.escape(PROMPTS[nxt])} <b>Predict first:</b> "
                                 f"{html.escape(ask.question)}")
            self.next_box.children = tuple(self.choices[nxt])
        else:
            self.prompt.value = html.escape(PROMPTS[nxt])
            if nxt == "a_stalls":
                paused = "" if self.ticker.running else " (the live clock is paused: press ▶)"
                self.next_box.children = (W.HTML(
                    f'<i style="color:{style.SOFT}">nothing to press: the server\'s clock '
                    f"is running{paused}</i>"),)
            else:
                self.next_box.children = (self.buttons[nxt],)
        for step, _ in STEPS:
            self.buttons[step].disabled = step != nxt or ask is not None
        self.log.value = self._log_html()
        self._draw_live()
        self._draw_side_by_side()

    def _server_view(self) -> tuple[Row | None, int | None, int]:
        """The story's row, its lease deadline and the server's now."""
        job_id = self.story.job_id
        if not job_id:
            return None, None, server_now_ms(self.conn)
        row = Row.from_record(jobs.record(self.conn, self.queue, job_id))
        deadline = lease_deadline(self.conn, self.queue, job_id)
        return row, deadline, server_now_ms(self.conn)

    def _draw_live(self) -> None:
        """The lanes and what each side holds, against the server's clock read now."""
        if self.server_lost:
            return
        row, deadline, now = self._server_view()
        self.lanes.value = self._lanes_html(now, deadline)
        self.beliefs.value = self._beliefs_html(row, deadline, now)

    def _by_step(self) -> dict[str, StepResult]:
        return {r.step: r for r in self.story.done}

    def _lane_parts(self, now: int, deadline: int | None) -> dict[str, list[str]]:
        story, done = self.story, self._by_step()
        t0 = story.started_ms
        lanes: dict[str, list[str]] = {"A": [], "reaper": [], "B": []}

        def at(step: str) -> str:
            return f"t+{(done[step].at_ms - t0) / 1000:.1f} s"

        if "a_claims" in done:
            lanes["A"].append(_chip(f"claims, token {story.token_a} · {at('a_claims')}"))
            a_deadline = story.deadline_a if story.deadline_a is not None else now
            lanes["A"].append(_bar(a_deadline - now, story.lease_ms))
        if "reaper_returns" in done:
            lanes["reaper"].append(_chip(f"returns the job to pending · {at('reaper_returns')}"))
        if "b_claims" in done:
            lanes["B"].append(_chip(f"claims, token {story.token_b} · {at('b_claims')}"))
            b_left = None if deadline is None or "b_completes" in done else deadline - now
            lanes["B"].append(_bar(b_left, HOLD_MS, gone="its lease is gone"))
        for who, step in (("A", "a_completes"), ("B", "b_completes")):
            if step in done:
                result = done[step]
                what = {ACCEPTED: "complete accepted", STALE: "complete refused EMQSTALE",
                        GONE: "complete: the job is gone"}.get(result.outcome, "complete")
                lanes[who].append(_chip(f"{what} · {at(step)}", ok=not result.refused))
        return lanes

    def _lanes_html(self, now: int, deadline: int | None) -> str:
        rows = []
        for who, parts in self._lane_parts(now, deadline).items():
            body = "".join(parts) or f'<span style="color:{style.SOFT}">…</span>'
            rows.append(f'<tr><th style="text-align:left;padding:4px 8px 4px 0;'
                        f'vertical-align:middle">{who}</th><td style="padding:4px 0">{body}'
                        "</td></tr>")
        return ('<table class="emq-lanes" style="border-collapse:collapse">'
                + "".join(rows) + "</table>")

    def _beliefs_html(self, row: Row | None, deadline: int | None, now: int) -> str:
        held = self._server_text(row, deadline, now)
        return (
            f'<div style="border-left:3px solid {style.SOFT};padding-left:8px">'
            f"<b>what A believes</b><br>{html.escape(self.story.believes('A'))}<br>"
            f"<b>what B believes</b><br>{html.escape(self.story.believes('B'))}<br>"
            f"<b>what the server holds</b><br>{html.escape(held)}</div>"
        )

    def _server_text(self, row: Row | None, deadline: int | None, now: int) -> str:
        if not self.story.job_id:
            return "no job yet"
        if row is None:
            return "no row: the job is retired"
        lease = "no lease" if deadline is None else (
            f"a lease with {span(deadline - now)} left" if deadline > now
            else f"a lease that ran out {span(now - deadline)} ago")
        return (f"state {row.shown(b'state', '?')}, attempts {row.shown(b'attempts', '?')}, "
                f"{lease}")

    def _log_html(self) -> str:
        items = []
        for result in self.story.done:
            colour = style.REFUSED_TEXT if result.refused else style.OK_TEXT
            mark = "✗ refused" if result.refused else "✓"
            said = ""
            if result.predicted:
                right = "as you said" if result.prediction_right else "not what you said"
                why = WHY.get(result.step) or WHY.get(result.outcome, "")
                said = (f"<br>you said <b>{html.escape(result.predicted)}</b>; the server: "
                        f"<b>{html.escape(result.outcome)}</b> ({right}). {html.escape(why)}")
            items.append(f"<li>{html.escape(result.title)} <span style='color:{colour}'>{mark}"
                         f"</span> <span style='font-family:monospace'>"
                         f"{html.escape(result.message)}</span>{said}</li>")
        if not items:
            return ""
        return f"<ol style='margin:4px 0'>{''.join(items)}</ol>"

    def _draw_side_by_side(self) -> None:
        if not self.runs:
            self.side_by_side.value = ""
            return
        cols = []
        for on in (True, False):
            text = self.runs.get(on, "not played yet: switch the fence, or let the button "
                                     "play it")
            cols.append(
                f'<div style="flex:1 1 360px;min-width:0"><b>fence {"on" if on else "off"}'
                f'</b><pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:'
                f'anywhere;font-size:85%;margin:2px 0">{html.escape(text)}</pre></div>')
        self.side_by_side.value = (f'<div style="display:flex;flex-wrap:wrap;gap:12px">'
                                   f"{''.join(cols)}</div>")

    # -- text ---------------------------------------------------------------------------------

    def log_text(self) -> str:
        """The story's log (see :meth:`echomq_lab.two_workers.TwoWorkersStory.log_text`)."""
        return self.story.log_text()

    def run_through(self) -> str:
        """Play the whole story from a fresh job, predictions answered by the program, and
        redraw; return its log (the app's "show me", and tests)."""
        text = self.story.run_through()
        self.runs[self.story.fence] = text
        self._say(self.message, self.story.verdict(), ok=True)
        self._draw()
        return text

    def text(self) -> str:
        """The message, the lanes, what each side holds and the log, as plain text."""
        mark = "ok" if self.last_ok else "refused"
        row, deadline, now = (None, None, 0) if self.server_lost else self._server_view()
        lanes = []
        for who, parts in self._lane_parts(now, deadline).items():
            words = [_plain(p) for p in parts]
            lanes.append(f"{who}: {' | '.join(words) if words else '…'}")
        ask = self.story.waiting_for
        nxt = self.story.next_step
        todo = (f"predict: {ask.question} ({' / '.join(ask.choices)})" if ask else
                f"to do: {PROMPTS[nxt]}" if nxt else "")
        return "\n".join([
            f"[{mark}] {self.last_message}", *lanes,
            f"A believes: {self.story.believes('A')}",
            f"B believes: {self.story.believes('B')}",
            f"the server holds: {self._server_text(row, deadline, now)}",
            self.log_text(), todo,
        ]).rstrip()


def _plain(part: str) -> str:
    """The words of a chip or a bar, without its markup."""
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", part)).strip()
