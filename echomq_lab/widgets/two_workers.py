"""The two-workers story as an explorable: lanes for A and B, A's lease draining on a front-end
clock, beliefs beside the server, the next step only, and the fence switch's two runs."""

from __future__ import annotations

import contextlib
import functools
import html
import re
from collections.abc import Callable

import ipywidgets as W  # type: ignore[import-untyped]
import redis

from echomq_lab.lessons import two_workers as tw
from echomq_lab.lessons import unfenced
from echomq_lab.lessons.stories import DEFAULT_LEASE_MS, HOLD_MS
from echomq_lab.row import Row
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel
from echomq_lab.widgets.sets_view import span
from echomq_lab.widgets.ticker import Ticker

#: The label of each step's button (the stall's is never shown: the live clock takes it).
BUTTON_LABELS: dict[str, str] = {
    "a_claims": "A claims", "a_stalls": "A stalls", "reaper_returns": "run the reaper",
    "b_claims": "B claims", "a_completes": "A completes", "b_completes": "B completes"}
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
    """The story as a panel (construction enqueues its job): ``buttons`` per step, "restart"
    and "other" (plays the other fence setting), ``choices[step]`` per prediction, ``fence``."""

    def __init__(self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS,
                 fence: bool = True) -> None:
        self.story = tw.TwoWorkersStory(conn, queue, lease_ms=lease_ms, fence=fence)
        self.runs: dict[bool, str] = {}  # the last finished log of each fence setting
        self.buttons: dict[str, W.Button] = {
            step: self._button(BUTTON_LABELS[step], functools.partial(self._step, step),
                               tooltip=title, button_style="primary")
            for step, title in tw.STEPS}
        self.buttons["restart"] = self._button("start again", self._restart, icon="refresh")
        self.buttons["other"] = self._button("play the other setting for me", self._play_other,
                                             icon="forward")
        self.choices: dict[str, list[W.Button]] = {
            step: [self._button(c, functools.partial(self._predict, step, c)) for c in ask.choices]
            for step, ask in tw.PREDICTIONS.items()}
        self.fence = W.ToggleButtons(
            options=[("fence on", True), ("fence off (demonstration)", False)], value=fence,
            description="complete:", tooltips=[
                "complete checks the token and the lease (the protocol)",
                f"A's late complete goes through the {unfenced.LABEL}"],
            style={"button_width": "auto"})
        self.fence.observe(self._guarded(lambda _change: self._restart()), names="value")
        self.ticker = Ticker(self._guarded_tick)
        self.heading, self.prompt, self.message = W.HTML(), W.HTML(), W.HTML()
        self.log, self.side_by_side, self.clock_note = W.HTML(), W.HTML(), W.HTML()
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

    def _button(self, description: str, action: Callable[[], object], **look: str) -> W.Button:
        button = W.Button(description=description, layout=W.Layout(width="auto"), **look)
        self._on(button, action)
        return button

    def _restart(self) -> None:
        self.story.fence = bool(self.fence.value)
        self._safely(self.message, lambda: f"the story's job {self.story.start()} is pending")
        self._draw()

    def _predict(self, step: str, choice: str) -> None:
        self._safely(self.message, lambda: self.story.predict(step, choice))
        self._draw()

    def _step(self, step: str) -> None:
        # the stall's button is never shown; a program pressing it waits for A's deadline
        if self._safely(self.message, lambda: self.story.step(step, wait=True).message):
            if (result := self.story.done[-1]).refused:  # said in red, as the server did
                self._say(self.message, result.message, ok=False)
            if step == "a_claims":
                self.ticker.start()
        self._draw()

    def press(self, step: str, choice: str | None = None) -> str:
        """Take ``step`` as a reader would: if it awaits a prediction, click ``choice`` (by
        default :data:`~echomq_lab.lessons.two_workers.PROGRAM_GUESSES`) first; return the
        message."""
        if self.story.waiting_for is not None and self.story.next_step == step:
            wanted = tw.PROGRAM_GUESSES[step] if choice is None else choice
            for button in (b for b in self.choices[step] if b.description == wanted):
                button.click()
        self.buttons[step].click()
        return self.last_message

    def _play_other(self) -> None:
        other = not self.story.fence
        setting = "on" if other else "off"

        def act() -> str:
            story = tw.TwoWorkersStory(self.story.conn, f"{self.story.queue}-{setting}",
                                       lease_ms=min(self.story.lease_ms, 1000), fence=other)
            self.runs[other] = story.run_through()
            return f"played the story with the fence {setting}, beside yours"

        self._safely(self.message, act)
        self._draw_side_by_side()

    def _guarded_tick(self) -> bool:
        ran, keep = self._attempt(self.message, self.tick)
        return ran and bool(keep) and self.last_error is None

    def tick(self) -> bool:
        """One beat of the clock: take the stall once A's lease is out, redraw; False: all done."""
        if self.story.next_step == "a_stalls":
            with contextlib.suppress(tw.NotYet):
                self._say(self.message, self.story.step("a_stalls", wait=False).message, ok=True)
            self._draw()
        else:
            self._draw_live()
        return self.story.next_step is not None and self.story.token_a is not None

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
        else:
            self.prompt.value = html.escape(PROMPTS[nxt])
            paused = "" if self.ticker.running else " (the live clock is paused: press ▶)"
            self.clock_note.value = (f'<i style="color:{style.SOFT}">nothing to press: the '
                                     f"server's clock is running{paused}</i>")
            self.next_box.children = (self.clock_note if nxt == "a_stalls" else self.buttons[nxt],)
        for step in tw.STEP_NAMES:
            self.buttons[step].disabled = step != nxt or ask is not None
        if story.done and nxt is None:
            self.runs[story.fence] = story.log_text()
        self.log.value = self._log_html()
        self._draw_live()
        self._draw_side_by_side()

    def _draw_live(self) -> None:
        """The lanes and what each side holds, against the server's clock read now."""
        if self.server_lost:
            return
        row, deadline, now = self.story.server_view()
        empty = f'<span style="color:{style.SOFT}">…</span>'
        rows = [f'<tr><th style="text-align:left;padding:4px 8px 4px 0;vertical-align:middle">'
                f'{who}</th><td style="padding:4px 0">{"".join(parts) or empty}</td></tr>'
                for who, parts in self._lane_parts(now, deadline).items()]
        self.lanes.value = ('<table class="emq-lanes" style="border-collapse:collapse">'
                            + "".join(rows) + "</table>")
        self.beliefs.value = (f'<div style="border-left:3px solid {style.SOFT};padding-left:8px">'
                              + "<br>".join(f"<b>{head}</b><br>{html.escape(body)}"
                                            for head, body in self._sides(row, deadline, now))
                              + "</div>")

    def _lane_parts(self, now: int, deadline: int | None) -> dict[str, list[str]]:
        """The chips and lease bars of each lane (A, the reaper, B), in the order taken."""
        story = self.story
        lanes: dict[str, list[str]] = {"A": [], "reaper": [], "B": []}
        for result in story.done:
            at = f" · t+{(result.at_ms - story.started_ms) / 1000:.1f} s"
            if result.step == "a_claims":
                lanes["A"] += [_chip(f"claims, token {story.token_a}{at}"),
                               _bar((story.deadline_a or now) - now, story.lease_ms)]
            elif result.step == "reaper_returns":
                lanes["reaper"].append(_chip(f"returns the job to pending{at}"))
            elif result.step == "b_claims":
                b_left = None if deadline is None else deadline - now
                lanes["B"] += [_chip(f"claims, token {story.token_b}{at}"),
                               _bar(b_left, HOLD_MS, gone="its lease is gone")]
            elif result.step.endswith("_completes"):
                what = COMPLETE_SAID.get(result.outcome, "complete")
                lanes[result.step[0].upper()].append(_chip(f"{what}{at}", ok=not result.refused))
        return lanes

    def _sides(self, row: Row | None, deadline: int | None, now: int) -> list[tuple[str, str]]:
        """What A and B believe and what the server holds, each in one line."""
        if not self.story.job_id:
            held = "no job yet"
        elif row is None:
            held = "no row: the job is retired"
        else:
            lease = "no lease" if deadline is None else (
                f"a lease with {span(deadline - now)} left" if deadline > now
                else f"a lease that ran out {span(now - deadline)} ago")
            state, attempts = row.shown(b"state", "?"), row.shown(b"attempts", "?")
            held = f"state {state}, attempts {attempts}, {lease}"
        believe = [(f"{who} believes", self.story.believes(who)) for who in "AB"]
        return [*believe, ("the server holds", held)]

    def _log_html(self) -> str:
        items = []
        for result in self.story.done:
            colour, mark = ((style.REFUSED_TEXT, "✗ refused") if result.refused
                            else (style.OK_TEXT, "✓"))
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

    def run_through(self) -> str:
        """Play the whole story with the program's predictions, redraw, and return its log."""
        text = self.story.run_through()
        self._say(self.message, self.story.verdict(), ok=True)
        self._draw()
        return text

    def text(self) -> str:
        """The message, the lanes, what each side holds and the log, as plain text."""
        row, deadline, now = (None, None, 0) if self.server_lost else self.story.server_view()
        lanes = [f"{who}: {' | '.join(_plain(p) for p in parts) or '…'}"
                 for who, parts in self._lane_parts(now, deadline).items()]
        ask, nxt = self.story.waiting_for, self.story.next_step
        todo = (f"predict: {ask.question} ({' / '.join(ask.choices)})" if ask else
                f"to do: {PROMPTS[nxt]}" if nxt else "")
        return "\n".join([
            f"[{'ok' if self.last_ok else 'refused'}] {self.last_message}", *lanes,
            *(f"{head}: {body}" for head, body in self._sides(row, deadline, now)),
            self.story.log_text(), todo,
        ]).rstrip()
