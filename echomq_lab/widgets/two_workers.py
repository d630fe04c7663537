"""TwoWorkersStory: the story of :mod:`echomq_lab.two_workers` as an explorable panel.

A and B are lanes; A's lease is a bar that drains on the server's clock, redrawn by a front-end
timer (:class:`echomq_lab.widgets.ticker.Ticker`), beside what A and B believe and what the
server holds. Only the next step is offered, and a step that asks for a prediction hides its
outcome until the reader picks one. A fence switch replays the story with A's late complete
unfenced; the last finished run of each setting is shown side by side.
"""

from __future__ import annotations

import functools
import html
import re

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab import jobs, unfenced
from echomq_lab import theme as style
from echomq_lab import two_workers as tw
from echomq_lab.clock import lease_deadline, server_now_ms
from echomq_lab.row import Row
from echomq_lab.stories import DEFAULT_LEASE_MS, HOLD_MS
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.sets_view import span
from echomq_lab.widgets.ticker import Ticker

#: The label of each step's button (the stall's is never shown: the live clock takes it).
BUTTON_LABELS: dict[str, str] = {
    "a_claims": "A claims", "a_stalls": "A stalls", "reaper_returns": "run the reaper",
    "b_claims": "B claims", "a_completes": "A completes", "b_completes": "B completes",
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
    tw.STALE: "complete compares A's token with the row's attempts; they differ, so nothing "
              "was written.",
    tw.ACCEPTED: "this complete reads no token: the row and B's lease are deleted under B.",
}
#: How a lane names a complete's outcome.
COMPLETE_SAID = {tw.ACCEPTED: "complete accepted", tw.STALE: "complete refused EMQSTALE",
                 tw.GONE: "complete: the job is gone"}


def _bar(left_ms: int | None, lease_ms: int, gone: str = "no lease") -> str:
    """A 160 px lease bar filled in proportion to the time left, and the time left in words."""
    if left_ms is None:
        return f'<span style="color:{style.SOFT}">{html.escape(gone)}</span>'
    frac = max(0.0, min(1.0, left_ms / lease_ms))
    colour = style.SET_COLOURS["active"] if left_ms > 0 else style.REFUSED_TEXT
    words = f"lease: {span(left_ms)} left" if left_ms > 0 else f"lease ran out {span(-left_ms)} ago"
    return (
        f'<span class="emq-lease-bar" role="meter" aria-valuenow="{max(0, left_ms)}" '
        f'aria-valuemin="0" aria-valuemax="{lease_ms}" aria-label="{words}" '
        f'style="display:inline-block;vertical-align:middle;width:160px;height:12px;'
        f'border:1px solid {colour};border-radius:3px;margin:0 6px">'
        f'<span style="display:block;height:100%;width:{frac * 100:.1f}%;background:{colour}">'
        f'</span></span><span style="white-space:nowrap">{words}</span>'
    )


def _chip(text: str, ok: bool | None = None) -> str:
    colour = style.INK_ON_PAGE if ok is None else style.OK_TEXT if ok else style.REFUSED_TEXT
    mark = "" if ok is None else " ✓" if ok else " ✗"
    return (f'<span style="display:inline-block;border:1px solid {style.SOFT};border-radius:'
            f'10px;padding:0 8px;margin:1px 4px 1px 0;color:{colour}">'
            f"{html.escape(text)}{mark}</span>")


def _plain(part: str) -> str:
    """The words of a chip or a bar, without its markup."""
    return html.unescape(re.sub(r"<[^>]+>", "", part)).strip()


class TwoWorkersStory(Panel):
    """The two-workers story as a panel; construction enqueues the story's job.

    ``buttons`` hold a button per step (the live clock takes ``a_stalls``; a program pressing
    it waits for A's deadline), ``"restart"`` and ``"other"`` (plays the other fence setting);
    ``choices[<step>]`` the answers of a prediction; ``fence`` is the on/off switch.
    """

    def __init__(
        self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS,
        fence: bool = True,
    ) -> None:
        self.conn, self.queue = conn, queue
        self.story = tw.TwoWorkersStory(conn, queue, lease_ms=lease_ms, fence=fence)
        self.runs: dict[bool, str] = {}  # the last finished log of each fence setting
        auto = W.Layout(width="auto")
        self.buttons: dict[str, W.Button] = {}
        for step, title in tw.STEPS:
            self.buttons[step] = W.Button(description=BUTTON_LABELS[step], tooltip=title,
                                          button_style="primary", layout=auto)
            self._on(self.buttons[step], functools.partial(self._step, step))
        self.buttons["restart"] = W.Button(description="start again", icon="refresh", layout=auto)
        self._on(self.buttons["restart"], self._restart)
        self.buttons["other"] = W.Button(description="play the other setting for me",
                                         icon="forward", layout=auto)
        self._on(self.buttons["other"], self._play_other)
        self.choices: dict[str, list[W.Button]] = {}
        for step, ask in tw.PREDICTIONS.items():
            self.choices[step] = [W.Button(description=choice, layout=auto)
                                  for choice in ask.choices]
            for button in self.choices[step]:
                self._on(button, functools.partial(self._predict, step, button.description))
        self.fence = W.ToggleButtons(
            options=[("fence on", True), ("fence off (demonstration)", False)], value=fence,
            description="complete:", tooltips=[
                "complete checks the token and the lease (the protocol)",
                f"A's late complete goes through the {unfenced.LABEL}"],
            style={"button_width": "auto"})
        self.fence.observe(self._on_fence, names="value")
        self.ticker = Ticker(self._guarded_tick)
        self.heading, self.prompt, self.message = W.HTML(), W.HTML(), W.HTML()
        self.log, self.side_by_side = W.HTML(), W.HTML()
        self.lanes = W.HTML(layout=W.Layout(flex="1 1 540px"))
        self.beliefs = W.HTML(layout=W.Layout(flex="1 1 300px"))
        self.next_box = W.HBox(layout=W.Layout(flex_flow="row wrap", align_items="center"))
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

    # -- actions --------------------------------------------------------------------------------

    def _restart(self) -> None:
        self._safely(self.message, lambda: f"the story's job {self.story.start()} is pending")
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
        # the stall's button is never shown; a program pressing it waits for A's deadline
        if self._safely(self.message, lambda: self.story.step(step, wait=True).message):
            result = self.story.done[-1]
            if result.refused:  # said in red, as the server did
                self._say(self.message, result.message, ok=False)
            if step == "a_claims":
                self.ticker.start()
            if self.story.next_step is None:
                self.runs[self.story.fence] = self.story.log_text()
        self._draw()

    def press(self, step: str, choice: str | None = None) -> str:
        """Take ``step`` as a reader would: if it awaits a prediction, click ``choice`` (by
        default :data:`~echomq_lab.two_workers.PROGRAM_GUESSES`) first; return the message."""
        ask = self.story.waiting_for
        if ask is not None and ask.step == step:
            wanted = tw.PROGRAM_GUESSES[step] if choice is None else choice
            for button in self.choices[step]:
                if button.description == wanted:
                    button.click()
        self.buttons[step].click()
        return self.last_message

    def _play_other(self) -> None:
        other = not self.story.fence
        setting = "on" if other else "off"

        def act() -> str:
            story = tw.TwoWorkersStory(self.conn, f"{self.queue}-{setting}",
                                       lease_ms=min(self.story.lease_ms, 1000), fence=other)
            self.runs[other] = story.run_through()
            return f"played the story with the fence {setting}, beside yours"

        self._safely(self.message, act)
        self._draw_side_by_side()

    def _guarded_tick(self) -> bool:
        ran, keep = self._attempt(self.message, self.tick)
        return ran and bool(keep) and self.last_error is None

    def tick(self) -> bool:
        """One beat of the live clock: take the stall once A's deadline has passed on the
        server's clock, and redraw; False when nothing is left to watch."""
        if self.story.next_step == "a_stalls":
            try:
                self.story.step("a_stalls", wait=False)
                self._say(self.message, self.story.done[-1].message, ok=True)
            except tw.NotYet:
                pass
            self._draw()
        else:
            self._draw_live()
        return self.story.next_step is not None and self.story.token_a is not None

    # -- drawing --------------------------------------------------------------------------------

    def _draw(self) -> None:
        story, nxt, ask = self.story, self.story.next_step, self.story.waiting_for
        colour = "" if story.fence else f' style="color:{style.REFUSED_TEXT}"'
        self.heading.value = f"<b{colour}>{html.escape(story.heading())}</b>"
        if nxt is None:
            self.prompt.value = (f"<b>{html.escape(story.verdict())}</b> Switch the fence and "
                                 "play again, or start again." if story.done else "")
            self.next_box.children = ()
        elif ask is not None:
            self.prompt.value = (f"{html.escape(PROMPTS[nxt])} <b>Predict first:</b> "
                                 f"{html.escape(ask.question)}")
            self.next_box.children = tuple(self.choices[nxt])
        elif nxt == "a_stalls":
            self.prompt.value = html.escape(PROMPTS[nxt])
            paused = "" if self.ticker.running else " (the live clock is paused: press ▶)"
            self.next_box.children = (W.HTML(
                f'<i style="color:{style.SOFT}">nothing to press: the server\'s clock '
                f"is running{paused}</i>"),)
        else:
            self.prompt.value = html.escape(PROMPTS[nxt])
            self.next_box.children = (self.buttons[nxt],)
        for step in tw.STEP_NAMES:
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
        return row, lease_deadline(self.conn, self.queue, job_id), server_now_ms(self.conn)

    def _draw_live(self) -> None:
        """The lanes and what each side holds, against the server's clock read now."""
        if self.server_lost:
            return
        row, deadline, now = self._server_view()
        empty = f'<span style="color:{style.SOFT}">…</span>'
        rows = [f'<tr><th style="text-align:left;padding:4px 8px 4px 0;vertical-align:middle">'
                f'{who}</th><td style="padding:4px 0">{"".join(parts) or empty}</td></tr>'
                for who, parts in self._lane_parts(now, deadline).items()]
        self.lanes.value = ('<table class="emq-lanes" style="border-collapse:collapse">'
                            + "".join(rows) + "</table>")
        sides = [(f"what {who} believes", self.story.believes(who)) for who in "AB"]
        sides.append(("what the server holds", self._server_text(row, deadline, now)))
        self.beliefs.value = (f'<div style="border-left:3px solid {style.SOFT};padding-left:8px">'
                              + "<br>".join(f"<b>{head}</b><br>{html.escape(body)}"
                                            for head, body in sides) + "</div>")

    def _lane_parts(self, now: int, deadline: int | None) -> dict[str, list[str]]:
        """The chips and lease bars of each lane (A, the reaper, B)."""
        story, done = self.story, {r.step: r for r in self.story.done}
        lanes: dict[str, list[str]] = {"A": [], "reaper": [], "B": []}

        def at(step: str) -> str:
            return f"t+{(done[step].at_ms - story.started_ms) / 1000:.1f} s"

        if "a_claims" in done:
            lanes["A"].append(_chip(f"claims, token {story.token_a} · {at('a_claims')}"))
            a_deadline = now if story.deadline_a is None else story.deadline_a
            lanes["A"].append(_bar(a_deadline - now, story.lease_ms))
        if "reaper_returns" in done:
            lanes["reaper"].append(_chip(f"returns the job to pending · {at('reaper_returns')}"))
        if "b_claims" in done:
            lanes["B"].append(_chip(f"claims, token {story.token_b} · {at('b_claims')}"))
            b_left = None if deadline is None or "b_completes" in done else deadline - now
            lanes["B"].append(_bar(b_left, HOLD_MS, gone="its lease is gone"))
        for who in "AB":
            result = done.get(f"{who.lower()}_completes")
            if result is not None:
                what = COMPLETE_SAID.get(result.outcome, "complete")
                lanes[who].append(_chip(f"{what} · {at(result.step)}", ok=not result.refused))
        return lanes

    def _server_text(self, row: Row | None, deadline: int | None, now: int) -> str:
        if not self.story.job_id:
            return "no job yet"
        if row is None:
            return "no row: the job is retired"
        lease = "no lease" if deadline is None else (
            f"a lease with {span(deadline - now)} left" if deadline > now
            else f"a lease that ran out {span(now - deadline)} ago")
        return f"state {row.shown(b'state', '?')}, attempts {row.shown(b'attempts', '?')}, {lease}"

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
        return f"<ol style='margin:4px 0'>{''.join(items)}</ol>" if items else ""

    def _draw_side_by_side(self) -> None:
        unplayed = "not played yet: switch the fence, or let the button play it"
        cols = [
            f'<div style="flex:1 1 360px;min-width:0"><b>fence {"on" if on else "off"}</b>'
            f'<pre style="white-space:pre-wrap;word-break:normal;overflow-wrap:anywhere;'
            f'font-size:85%;margin:2px 0">{html.escape(self.runs.get(on, unplayed))}</pre></div>'
            for on in (True, False)]
        self.side_by_side.value = (f'<div style="display:flex;flex-wrap:wrap;gap:12px">'
                                   f"{''.join(cols)}</div>" if self.runs else "")

    # -- text -----------------------------------------------------------------------------------

    def log_text(self) -> str:
        """The story's log (see :meth:`echomq_lab.two_workers.TwoWorkersStory.log_text`)."""
        return self.story.log_text()

    def run_through(self) -> str:
        """Play the whole story with the program's predictions, redraw, and return its log."""
        text = self.story.run_through()
        self.runs[self.story.fence] = text
        self._say(self.message, self.story.verdict(), ok=True)
        self._draw()
        return text

    def text(self) -> str:
        """The message, the lanes, what each side holds and the log, as plain text."""
        row, deadline, now = (None, None, 0) if self.server_lost else self._server_view()
        lanes = [f"{who}: {' | '.join(_plain(p) for p in parts) or '…'}"
                 for who, parts in self._lane_parts(now, deadline).items()]
        ask, nxt = self.story.waiting_for, self.story.next_step
        todo = (f"predict: {ask.question} ({' / '.join(ask.choices)})" if ask else
                f"to do: {PROMPTS[nxt]}" if nxt else "")
        return "\n".join([
            f"[{'ok' if self.last_ok else 'refused'}] {self.last_message}", *lanes,
            f"A believes: {self.story.believes('A')}",
            f"B believes: {self.story.believes('B')}",
            f"the server holds: {self._server_text(row, deadline, now)}",
            self.log_text(), todo,
        ]).rstrip()
