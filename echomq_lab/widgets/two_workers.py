"""The two-workers story as an explorable: lanes for A and B, A's lease draining on a front-end
clock, beliefs beside the server, the next step only, the fence drawn at A's late complete (A's
token against the row's attempts), and each fence setting's finished run as lanes of its own,
side by side, with what happened beside what the system now believes."""

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
    "b_claims": "B claims", "a_completes": "A completes", "b_completes": "B completes",
    tw.BRANCH[0]: "A completes (course's)", tw.LAB_BRANCH[0]: "A completes (lab's)"}
#: The prompt beside the next step: what to do or watch, never what will happen.
PROMPTS: dict[str, str] = {
    "a_claims": "One job is pending. A takes it with a short lease.",
    "a_stalls": "A has stopped answering (a long pause, a slow disk). Watch A's lease.",
    "reaper_returns": "A still believes it holds the job. Compare with what the server holds, "
                      "then run the reaper.",
    "b_claims": "B is free and asks for work.",
    "a_completes": "A wakes up, unaware of all this, and reports its work done.",
    "b_completes": "B finishes its work.",
    tw.BRANCH[0]: "A wakes before anyone has claimed the job again, and reports its work done. "
                  "First through the course's complete, on a copy of the job brought to this "
                  "same point, so that the story's job is left as it is.",
    tw.LAB_BRANCH[0]: "Read what the course's complete and the course's claim left on the copy, "
                      "in A's lane. Now the story's own job, still where the reaper left it.",
}
#: The fork's offer, shown beside B's prediction right after the reaper (fence on).
FORK_OFFER = "Or see what happens if A wakes first, before anyone claims again:"
#: The same offer once the story is past the fork: a fresh job is taken back to it first.
FORK_AGAIN = ("Or see what happens if A wakes first, before anyone claims again (a fresh job is "
              "taken to the reaper's step first; A's lease runs out again, a few seconds):")
#: What the lanes' times mean, said once above them.
CLOCK_NOTE = ("t+ is the time since the story's job was enqueued, in seconds on the server's "
              "clock.")
#: How a lane names a complete's outcome.
COMPLETE_SAID = {tw.ACCEPTED: "complete accepted", tw.STALE: "complete refused EMQSTALE",
                 tw.GONE: "complete: the job is gone"}
#: How a lane names which complete A's early call went through (the branch).
WHICH_COMPLETE = {tw.BRANCH[0]: "course's ", tw.LAB_BRANCH[0]: "lab's "}
#: The fence's picture: its size in px (never scaled, so its words keep their size).
FENCE_W, FENCE_H = 264, 58


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


def fence_svg(token: int, attempts: int | None, *, fenced: bool, leased: bool) -> str:
    """A's token against the row's attempts at A's late complete, as a small picture: A's call
    as an arrow from its token to the row, the fence between them, and what the fence made of
    the two numbers. ``attempts`` None: no row; ``leased``: the id was still in active."""
    ink, bad, ok = style.INK_ON_PAGE, style.REFUSED_TEXT, style.OK_TEXT
    row = "no row" if attempts is None else f"attempts {attempts}"
    if not fenced:
        verdict, colour = "not compared: accepted", bad
    elif attempts != token:
        verdict, colour = f"{token} ≠ {attempts}: refused", bad
    elif not leased:
        verdict, colour = f"{token} = {attempts}, lease gone: refused", bad
    else:
        verdict, colour = f"{token} = {attempts}: accepted", ok
    stops = fenced and colour == bad
    wall = (f'<rect x="127" y="2" width="8" height="36" style="fill:{colour}"/>' if fenced else
            f'<rect x="127" y="2" width="8" height="36" style="fill:none;stroke:{colour};'
            'stroke-dasharray:3 3"/>')
    end = 122 if stops else 148
    arrow = (f'<line x1="112" y1="20" x2="{end}" y2="20" style="stroke:{ink};stroke-width:2"/>'
             f'<path d="M {end} 20 l -7 -5 v 10 z" style="fill:{ink}"/>')
    label = f"the fence: A's token {token} against the row's {row}: {verdict}"
    return (
        f'<svg class="emq-fence" role="img" aria-label="{html.escape(label)}" width="{FENCE_W}" '
        f'height="{FENCE_H}" viewBox="0 0 {FENCE_W} {FENCE_H}" style="vertical-align:middle;'
        f'font-family:sans-serif;font-size:12px">'
        f'<rect x="2" y="6" width="110" height="28" rx="5" style="fill:none;stroke:{ink}"/>'
        f'<text x="57" y="25" text-anchor="middle" style="fill:{ink}">A: token {token}</text>'
        f"{wall}{arrow}"
        f'<rect x="152" y="6" width="110" height="28" rx="5" style="fill:none;stroke:{ink}"/>'
        f'<text x="207" y="25" text-anchor="middle" style="fill:{ink}">row: {row}</text>'
        f'<text x="132" y="53" text-anchor="middle" font-weight="bold" style="fill:{colour}">'
        f"{html.escape(verdict)}</text></svg>"
    )


def _plain(part: str) -> str:
    """The words of a chip, a bar or a picture, without its markup (a picture: its label)."""
    if part.startswith("<svg") and (label := re.search(r'aria-label="([^"]*)"', part)):
        return html.unescape(label.group(1))
    return html.unescape(re.sub(r"<[^>]+>", "", part)).strip()


def lane_parts(story: tw.TwoWorkersStory, now: int,
               deadline: int | None) -> dict[str, list[str]]:
    """The chips, lease bars and the fence's picture of each lane (A, the reaper, B) of
    ``story``, in the order taken, against the server's ``now`` and B's lease ``deadline``."""
    lanes: dict[str, list[str]] = {"A": [], "reaper": [], "B": []}
    for result in story.done:
        at = f" · t+{(result.at_ms - story.started_ms) / 1000:.1f} s"
        if result.step == "a_claims":
            over = story.next_step is None and story.deadline_a is not None
            ran_out = ((story.deadline_a or 0) - story.started_ms) / 1000
            lease = (_chip(f"its lease ran out at t+{ran_out:.1f} s") if over
                     else _bar((story.deadline_a or now) - now, story.lease_ms))
            lanes["A"] += [_chip(f"claims, token {story.token_a}{at}"), lease]
        elif result.step == "reaper_returns":
            lanes["reaper"].append(_chip(f"returns the job to pending{at}"))
        elif result.step == "b_claims":
            b_left = None if deadline is None else deadline - now
            lanes["B"] += [_chip(f"claims, token {story.token_b}{at}"),
                           _bar(b_left, HOLD_MS, gone="its lease is gone")]
        elif result.step.endswith("_completes") or result.step in WHICH_COMPLETE:
            what = WHICH_COMPLETE.get(result.step, "") + COMPLETE_SAID.get(result.outcome,
                                                                           "complete")
            who = "B" if result.step == "b_completes" else "A"
            lanes[who].append(_chip(f"{what}{at}", ok=not result.refused))
            if result.step == tw.BRANCH[0] and story.copy_left:
                lanes["A"].append(_chip(f"on the copy: {story.copy_left}"))
            if who == "A" and story.token_a is not None:
                early = result.step in WHICH_COMPLETE
                lanes["A"].append(fence_svg(
                    story.token_a, story.token_a if early else story.token_b,
                    fenced=story.fence or early, leased=result.step != tw.LAB_BRANCH[0]))
    return lanes


def lanes_html(lanes: dict[str, list[str]]) -> str:
    """The lanes as a table: one row per lane, its parts in order."""
    empty = f'<span style="color:{style.SOFT}">…</span>'
    rows = [f'<tr><th scope="row" style="text-align:left;padding:4px 8px 4px 0;'
            f'vertical-align:middle">{who}</th><td style="padding:4px 0">'
            f'{"".join(parts) or empty}</td></tr>' for who, parts in lanes.items()]
    return ('<table class="emq-lanes" style="border-collapse:collapse">'
            + "".join(rows) + "</table>")


def aftermath_html(story: tw.TwoWorkersStory) -> str:
    """What happened beside what the system now believes, for a finished story."""
    happened, believed = story.aftermath()
    if not happened:
        return ""
    cols = [f'<div style="flex:1 1 220px;min-width:0"><b>{head}</b><ul style="margin:2px 0;'
            f'padding-left:18px">{"".join(f"<li>{html.escape(x)}</li>" for x in items)}</ul></div>'
            for head, items in (("what happened", happened),
                                ("what the system now believes", believed))]
    return ('<div class="emq-aftermath" style="display:flex;flex-wrap:wrap;gap:8px;'
            f'margin-top:4px">{"".join(cols)}</div>')


class TwoWorkersStory(Panel):
    """The story as a panel (construction enqueues its job): ``buttons`` per step (the branch's
    too), "restart", "fork" (A wakes first) and "other" (plays the other fence setting with no
    predictions), ``choices[step]`` per prediction, ``fence``."""

    def __init__(self, conn: redis.Redis, queue: str, *, lease_ms: int = DEFAULT_LEASE_MS,
                 fence: bool = True) -> None:
        self.story = tw.TwoWorkersStory(conn, queue, lease_ms=lease_ms, fence=fence)
        #: One layout and one style for every button of the panel (each is a model the page
        #: must receive before it draws the panel).
        self._layout, self._style = W.Layout(width="auto"), W.ButtonStyle()
        #: Each fence setting's last finished run: its lanes and aftermath as HTML, and as text.
        self.runs: dict[bool, str] = {}
        self.runs_text: dict[bool, str] = {}
        self.buttons: dict[str, W.Button] = {
            step: self._button(BUTTON_LABELS[step], functools.partial(self._step, step),
                               tooltip=title, button_style="primary")
            for step, title in tw.TITLES.items()}
        self.buttons["restart"] = self._button("start again", self._restart, icon="refresh")
        self.buttons["fork"] = self._button("A wakes first", self._fork,
                                            tooltip="take the other branch: A wakes before "
                                                    "anyone claims the job again")
        self.buttons["other"] = self._button("play the other setting for me", self._play_other,
                                             icon="forward")
        self.choices: dict[str, list[W.Button]] = {
            step: [self._button(c, functools.partial(self._predict, step, c)) for c in ask.choices]
            for step, ask in tw.PREDICTIONS.items()}
        self.fence = W.ToggleButtons(
            options=[("fence on", True), ("fence off (demonstration)", False)], value=fence,
            description="complete:", tooltips=[
                "complete checks the token (the course's fence) and, in the lab's scripts, "
                "that the lease is still held",
                f"A's late complete goes through the {unfenced.LABEL}"],
            style={"button_width": "auto"})
        self.fence.observe(self._guarded(lambda _change: self._restart()), names="value")
        self.ticker = Ticker(self._guarded_tick)
        self.heading, self.prompt, self.message = W.HTML(), W.HTML(), W.HTML()
        self.log, self.side_by_side, self.clock_note = W.HTML(), W.HTML(), W.HTML()
        self.working = W.HTML()
        self.lanes = W.HTML(layout=W.Layout(flex="1 1 540px"))
        self.beliefs = W.HTML(layout=W.Layout(flex="1 1 300px"))
        self.next_box = W.HBox(layout=W.Layout(flex_flow="row wrap", align_items="center"))
        self.fork_note = W.HTML(html.escape(FORK_OFFER))
        self.fork_box = W.HBox([self.fork_note, self.buttons["fork"]],
                               layout=W.Layout(flex_flow="row wrap", align_items="center"))
        self.widget = W.VBox([
            W.HBox([self.fence, self.buttons["restart"], self.ticker.widget],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            self.heading,
            W.HBox([self.lanes, self.beliefs], layout=W.Layout(flex_flow="row wrap")),
            self.prompt, self.next_box, self.fork_box, self.message, self.log,
            W.HBox([self.buttons["other"], self.working],
                   layout=W.Layout(flex_flow="row wrap", align_items="center")),
            self.side_by_side,
        ])  # fmt: skip
        self.widget.add_class("emq-two-workers")
        self._restart()

    def _button(self, description: str, action: Callable[[], object], **look: str) -> W.Button:
        button = W.Button(description=description, layout=self._layout, style=self._style,
                          **look)
        self._on(button, action)
        return button

    def _restart(self) -> None:
        self.story.fence = bool(self.fence.value)
        for button in (b for row in self.choices.values() for b in row):
            button.button_style, button.icon, button.disabled = "", "", False
        self._safely(self.message, lambda: f"the story's job {self.story.start()} is pending")
        self._draw()

    def _predict(self, step: str, choice: str) -> None:
        """A pick: the server takes the step on the first one; a wrong pick is told why beside
        the question, its button marked and closed, and the question stays until a right one."""
        if self._safely(self.message, lambda: self.story.predict(step, choice)):
            button = next(b for b in self.choices[step] if b.description == choice)
            right = not self.story.missed
            button.button_style, button.icon = ("success", "check") if right else ("danger",
                                                                                   "times")
            self._say(self.message, self.last_message, ok=right)
        self._draw()

    def _fork(self) -> None:
        """Take the fork; past it, the story first takes a fresh job back there (the kernel
        waits out A's lease meanwhile, "running…" on the message line), its picks unmarked."""
        if self._safely(self.message, self.story.branch) and len(self.story.done) == 3:
            for button in (b for row in self.choices.values() for b in row):
                button.button_style, button.icon = "", ""
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
        """Take ``step`` as a reader would: a step that asks for a prediction is taken by
        clicking ``choice`` (by default the right one, the outcome the rules give); any other
        by its button. Return the message. The branch's step takes the fork first."""
        if step == self.story.fork:
            self.buttons["fork"].click()
        if self.story.waiting_for is not None and self.story.next_step == step:
            wanted = self.story.expected(step) if choice is None else choice
            for button in (b for b in self.choices[step] if b.description == wanted):
                button.click()
        else:
            self.buttons[step].click()
        return self.last_message

    def _play_other(self) -> None:
        """Play the other fence setting on a job of its own, with this story's lease and no
        predictions, saying while it runs that it is running (the kernel waits out A's lease)."""
        other = not self.story.fence
        setting = "on" if other else "off"

        def act() -> str:
            story = tw.TwoWorkersStory(self.story.conn, f"{self.story.queue}-{setting}",
                                       lease_ms=self.story.lease_ms, fence=other, asks=False)
            story.replay()
            self._keep(story)
            return f"played the story with the fence {setting}, beside yours"

        self.working.value = (f'<span role="status" class="emq-working"><i>playing the fence '
                              f"{setting} story… about {self.story.lease_ms / 1000 + 1:.0f} s "
                              "(A's lease must run out first)</i></span>")
        try:
            self._safely(self.message, act)
        finally:
            self.working.value = ""
        self._draw_side_by_side()

    def _keep(self, story: tw.TwoWorkersStory) -> None:
        """Keep ``story``'s finished run for its fence setting, as lanes and as text."""
        row, deadline, now = story.server_view()
        del row
        lanes = lane_parts(story, now, deadline)
        self.runs[story.fence] = lanes_html(lanes) + aftermath_html(story)
        happened, believed = story.aftermath()
        self.runs_text[story.fence] = "\n".join([
            story.heading(), *(f"{who}: {' | '.join(_plain(x) for x in parts) or '…'}"
                               for who, parts in lanes.items()),
            *(f"happened: {x}" for x in happened), *(f"believes: {x}" for x in believed)])

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
            again = " <b>Pick again:</b>" if self.story.missed else " <b>Predict first:</b>"
            self.prompt.value = (f"{html.escape(PROMPTS[nxt])}{again} "
                                 f"{html.escape(ask.question)} <i>Your pick runs the step; "
                                 "the server decides.</i>")
            self.next_box.children = tuple(self.choices[nxt])
        else:
            self.prompt.value = html.escape(PROMPTS[nxt])
            paused = (" (the live clock is paused: press resume the clock)"
                      if self.ticker.paused else "")
            self.clock_note.value = (f'<i style="color:{style.SOFT}">nothing to press: the '
                                     f"server's clock is running{paused}</i>")
            self.next_box.children = (self.clock_note if nxt == "a_stalls" else self.buttons[nxt],)
        self.fork_box.layout.display = "flex" if story.fork else "none"
        self.fork_note.value = html.escape(FORK_OFFER if story.at_fork else FORK_AGAIN)
        self._settle_controls()
        if story.done and nxt is None:
            self._keep(story)
        self.log.value = self._log_html()
        self._draw_live()
        self._draw_side_by_side()

    def _settle_controls(self) -> None:
        """Only the next step's button is open (none while a prediction is owed), and the fork's
        while it may be taken."""
        nxt, ask = self.story.next_step, self.story.waiting_for
        self.buttons["fork"].disabled = self.story.fork is None
        for step in tw.TITLES:
            self.buttons[step].disabled = step != nxt or ask is not None
        for step, row in self.choices.items():  # a pick already refuted stays closed
            for button in row:
                button.disabled = step != nxt or button.description in self.story.tries

    def _focus_after(self, pressed: W.Button) -> W.Widget | None:
        """After a press the focus stays on ``pressed`` while it is still on show and open;
        otherwise it moves to the control that now comes next: a choice still open, the next
        step's button (while A's lease drains, the clock's pause button), the fork's, or
        "start again" once the story is over."""
        shown = [b for b in self.next_box.children if isinstance(b, W.Button)]
        if self.story.next_step == "a_stalls":  # nothing to press: the clock's button is next
            shown.append(self.ticker.button)
        if self.story.fork is not None:
            shown.append(self.buttons["fork"])
        always = (self.buttons["restart"], self.buttons["other"])
        if not pressed.disabled and (pressed in shown or pressed in always):
            return None
        return next((b for b in shown if not b.disabled), self.buttons["restart"])

    def _draw_live(self) -> None:
        """The lanes and what each side holds, against the server's clock read now."""
        if self.server_lost:
            return
        row, deadline, now = self.story.server_view()
        note = (f'<div class="emq-clock-note" style="color:{style.SOFT};font-size:smaller">'
                f"{html.escape(CLOCK_NOTE)}</div>" if self.story.done else "")
        self.lanes.value = note + lanes_html(lane_parts(self.story, now, deadline))
        self.beliefs.value = (f'<div style="border-left:3px solid {style.SOFT};padding-left:8px">'
                              + "<br>".join(f"<b>{head}</b><br>{html.escape(body)}"
                                            for head, body in self._sides(row, deadline, now))
                              + "</div>")

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
            colour, mark = ((style.REFUSED_TEXT, "✗") if result.refused
                            else (style.OK_TEXT, "✓"))
            said = ""
            if result.predicted:
                picks = [f"{html.escape(p)} ✗" for p in result.tries]
                picks.append(f"<b>{html.escape(result.outcome)}</b> ✓")
                said = (f"<br>your picks: {', '.join(picks)}. "
                        f"{html.escape(self.story.why(result.step))}")
            items.append(f"<li>{html.escape(result.title)} <span style='color:{colour}'>{mark}"
                         f"</span> <span style='font-family:monospace'>"
                         f"{html.escape(result.message)}</span>{said}</li>")
        return f"<ol style='margin:4px 0'>{''.join(items)}</ol>" if items else ""

    def _draw_side_by_side(self) -> None:
        unplayed = (f'<i style="color:{style.SOFT}">not played yet: switch the fence, or let '
                    "the button play it</i>")
        cols = [
            f'<div class="emq-run" style="flex:1 1 360px;min-width:0;border-top:1px solid '
            f'{style.SOFT};padding-top:4px"><b>fence {"on" if on else "off"}</b>'
            f"{self.runs.get(on, unplayed)}</div>"
            for on in (True, False)]
        self.side_by_side.value = (f'<div style="display:flex;flex-wrap:wrap;gap:16px">'
                                   f"{''.join(cols)}</div>" if self.runs else "")

    def run_through(self) -> str:
        """Play the whole story with the program's predictions, redraw, and return its log."""
        text = self.story.run_through()
        self._say(self.message, self.story.verdict(), ok=True)
        self._draw()
        return text

    def text(self) -> str:
        """The message, the lanes, what each side holds, the log and the finished runs, as
        plain text."""
        row, deadline, now = (None, None, 0) if self.server_lost else self.story.server_view()
        lanes = [f"{who}: {' | '.join(_plain(p) for p in parts) or '…'}"
                 for who, parts in lane_parts(self.story, now, deadline).items()]
        ask, nxt = self.story.waiting_for, self.story.next_step
        todo = (f"predict: {ask.question} ({' / '.join(ask.choices)})" if ask else
                f"to do: {PROMPTS[nxt]}" if nxt else "")
        offer = FORK_OFFER if self.story.at_fork else FORK_AGAIN
        fork = f"or: {offer} (A wakes first)" if self.story.fork else ""
        if ask is not None and self.story.missed:
            todo = f"pick again: {ask.question} (tried: {', '.join(self.story.tries)})"
        runs = [f"finished run, fence {'on' if on else 'off'}:\n{self.runs_text[on]}"
                for on in (True, False) if on in self.runs_text]
        lines = [
            f"[{'ok' if self.last_ok else 'refused'}] {self.last_message}", *lanes,
            CLOCK_NOTE if self.story.done else "",
            *(f"{head}: {body}" for head, body in self._sides(row, deadline, now)),
            self.story.log_text(), todo, fork, *runs,
        ]
        return "\n".join(line for line in lines if line).rstrip()
