"""The notebooks in a real JupyterLab, driven by headless Chromium: run them, click the widgets.

One JupyterLab (on a temporary copy of ``notebooks/``) and one browser serve every test (the
module fixtures ``lab``, ``browser`` and ``ran`` of tests/conftest.py). Each
notebook is opened in its own tab and workspace, its stored outputs are cleared, and Run All
runs it live; what the tests then read and click is what the kernel just drew.

- every notebook: no cell raises, no widget fails to render, each widget the stored notebook
  shows is live again, a full screenshot is saved, and one safe button (see ``CLICKS``) changes
  its panel;
- 02 (the centre page): the transition panel and the fencing panel, clicked through;
- 02 and 04: the two-workers story, step by step, down to the ``EMQSTALE`` refusal and the gone
  row.

Screenshots go to ``artifacts/screenshots/`` (or ``$ECHOMQ_SCREENSHOTS``). With
``ECHOMQ_UPDATE_SCREENSHOT=1`` the end of 02's two-workers story is also copied to
``docs/screenshot-02.png`` (the README image). Without a Chromium the tests skip, saying why;
with ``ECHOMQ_REQUIRE_BACKENDS=1`` (CI) they fail instead.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from echomq_lab.lessons.two_workers import STEPS
from echomq_lab.widgets.record_view import GONE
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tests.support.story import play
from tools.browser import (
    STDERR_OUTPUT,
    find_button,
    notebook_screenshot,
    stored_stderr,
    stored_widgets,
)
from tools.course import file_of
from tools.course import load as course_pages

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
NOTEBOOKS = [p.file for p in course_pages()]
CENTRE = file_of("the-state-and-attempts")
STORY = file_of("lab-two-workers-one-job")
README_SHOT = ROOT / "docs" / "screenshot-02.png"
#: How long a click may take to show (the kernel may wait out a 1.5 s lease meanwhile).
UPDATE_MS = 30_000
#: Inside the notebook on show: a widget that could not be drawn (the manager shows an error
#: icon, "Click to show javascript error."), a widget drawn live in an output (and not such an
#: error), and the widgets' buttons.
BROKEN_WIDGET = ".jp-NotebookPanel:not(.lm-mod-hidden) .jupyter-widgets-error-widget"
LIVE_WIDGET = (
    ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output"
    " > .jupyter-widgets:not(:has(.jupyter-widgets-error-widget))"
)
LIVE_BUTTONS = ".jp-NotebookPanel:not(.lm-mod-hidden) :is(.widget-button, .widget-toggle-button)"


@dataclass(frozen=True)
class Click:
    """A safe click in a notebook: press ``presses`` in the panel ``panel`` (a CSS selector),
    after which the panel shows ``shows`` (a text it did not show before)."""

    panel: str
    presses: tuple[str, ...]
    shows: str


#: One safe click per notebook that has buttons. A notebook with live buttons and no entry here
#: fails its test: add one (a panel, the buttons to press, a text that then appears).
CLICKS: dict[str, Click] = {
    file_of("the-record-hash"): Click(
        ".emq-field-picker", ("payload",), "the caller's bytes"),
    file_of("the-hash-and-its-fields"): Click(
        ".emq-field-picker", ("payload",), "the caller's bytes"),
    CENTRE: Click(
        ".emq-transition-panel", ("enqueue", "Run"), "enqueue wrote state=pending, attempts=0"),
    file_of("the-payload"): Click(
        ".emq-payload-round-trip", ("round-trip the samples",), "7 of 7 came back byte for byte"),
    STORY: Click(".emq-lab-panel", ("enqueue",), ": enqueued"),
    file_of("lab-the-fence-under-load"): Click(".emq-simulation", ("Run",), "every verdict holds"),
    file_of("lab-one-round-trip"): Click(
        ".emq-measure", ("measure now",), "every one an EVALSHA"),
    file_of("lab-one-queue-one-slot"): Click(
        ".emq-cluster-panel", ("enqueue", "run it"), "answered by primary"),
    file_of("lab-the-workshop"): Click(
        ".emq-panel:has(input[placeholder^='echomq://'])", ("claim",), "claimed JOB"),
}


# -- reading and clicking a panel --------------------------------------------------------------


def press(scope: Locator, label: str) -> None:
    """Click the enabled button (or toggle button) labelled exactly ``label`` in ``scope``."""
    button = find_button(scope, label)
    expect(button, f"one button {label!r}").to_have_count(1)
    expect(button, f"button {label!r} is enabled").to_be_enabled()
    button.click()


def field(view: Locator, name: str) -> Locator:
    """The value cell of field ``name`` in a record view's table."""
    label = view.page.locator("td:first-child", has_text=re.compile(rf"^{name}\b"))
    return view.locator("table.emq-row tr", has=label).locator("td").nth(1)


def expect_row(view: Locator, state: str, attempts: str) -> None:
    expect(field(view, "state"), f"the row's state is {state}").to_have_text(
        state, timeout=UPDATE_MS)
    expect(field(view, "attempts"), f"the row's attempts is {attempts}").to_have_text(
        attempts, timeout=UPDATE_MS)


def expect_gone(view: Locator) -> None:
    expect(view.locator(".emq-gone"), "the row is gone").to_have_text(GONE, timeout=UPDATE_MS)


def expect_in_set(panel: Locator, job_id: str, where: str | None) -> None:
    """``job_id`` is listed in set ``where`` and in no other set (``None``: in none)."""
    for name in ("pending", "active", "schedule", "dead"):
        column = panel.locator(f".emq-sets-view .emq-set-{name}")
        if name == where:
            expect(column, f"{job_id} is in {name}").to_contain_text(job_id, timeout=UPDATE_MS)
        else:
            expect(column, f"{job_id} is not in {name}").not_to_contain_text(
                job_id, timeout=UPDATE_MS)
    expect(panel.locator(".emq-sets-view"), "check() finds no drift").to_contain_text(
        "check(): no drift")


def message(panel: Locator) -> Locator:
    """The panel's own message line (the first; a sets view's verdict line comes later)."""
    return panel.locator(".emq-message").first


def job_id_in(text: str) -> str:
    found = re.search(r"\bJOB[0-9A-Za-z]+", text)
    assert found, f"no job id in {text!r}"
    return found.group(0)


def no_widget_errors(page: Page, name: str) -> None:
    """No widget failed to render, in either way the widget manager says it, and no traceback."""
    assert page.get_by_text("Error displaying widget").count() == 0, (
        f"{name}: 'Error displaying widget' in the page")
    broken = page.locator(BROKEN_WIDGET).count()
    assert broken == 0, f"{name}: {broken} widget(s) drawn as an error icon (a JavaScript error)"
    stderr, stored = page.locator(STDERR_OUTPUT), stored_stderr(NOTEBOOKS_DIR / name)
    assert stderr.count() == stored, (
        f"{name}: {stderr.count()} outputs on stderr (a traceback or a warning), {stored} stored:"
        f"\n{stderr.last.inner_text()[-3000:] if stderr.count() else ''}")


# -- every notebook ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_live_and_a_button_works(
    name: str, ran: Callable[[str], Page], screenshots: Path
) -> None:
    page = ran(name)
    no_widget_errors(page, name)
    live, stored = page.locator(LIVE_WIDGET).count(), stored_widgets(NOTEBOOKS_DIR / name)
    assert live == stored, f"{name}: {stored} widget outputs stored, {live} drawn live"
    shot = notebook_screenshot(page, screenshots / f"{Path(name).stem}.png")
    print(f"\n{name}: {live} live widgets; screenshot {shot}")

    buttons = page.locator(LIVE_BUTTONS).count()
    click = CLICKS.get(name)
    if click is None:
        assert buttons == 0, (
            f"{name} has {buttons} live buttons but no entry in CLICKS (tests/test_browser.py): "
            "add a safe button to press and a text it makes the panel show")
        return
    assert buttons > 0, f"{name}: no live button drawn (expected the panel {click.panel})"
    panel = page.locator(click.panel)
    expect(panel, f"{name}: one {click.panel} panel").to_have_count(1)
    assert click.shows not in panel.inner_text(), (
        f"{name}: {click.shows!r} already shown before the click: the check would prove nothing")
    for label in click.presses:
        press(panel, label)
    expect(panel, f"{name}: pressing {' then '.join(click.presses)}").to_contain_text(
        click.shows, timeout=UPDATE_MS)
    no_widget_errors(page, name)


# -- 02, the centre page: transitions and the fencing check -------------------------------------


def test_centre_transition_panel_writes_state_and_attempts(ran: Callable[[str], Page]) -> None:
    page = ran(CENTRE)
    panel = page.locator(".emq-transition-panel")
    view = panel.locator(".emq-record-view")

    press(panel, "enqueue")
    press(panel, "Run")
    expect(message(panel)).to_contain_text("enqueue wrote state=pending, attempts=0",
                                           timeout=UPDATE_MS)
    expect_row(view, "pending", "0")

    # claim takes the oldest pending job (the notebook may have left one): a fresh one either way.
    press(panel, "claim")
    press(panel, "Run")
    expect(message(panel)).to_contain_text(
        re.compile(r"claim wrote state=active, attempts=1\b.* \(token 1\)"), timeout=UPDATE_MS)
    expect_row(view, "active", "1")
    job = job_id_in(panel.locator(".emq-record-view code").first.inner_text())
    expect_in_set(panel, job, "active")

    press(panel, "reprocess")
    press(panel, "Run")
    expect(message(panel)).to_contain_text("EMQSTATE", timeout=UPDATE_MS)
    expect(panel.locator(".emq-message.emq-refused").first).to_be_visible()
    expect_row(view, "active", "1")

    press(panel, "complete")
    press(panel, "Run")
    expect(message(panel)).to_contain_text("complete with token 1 deleted the row",
                                           timeout=UPDATE_MS)
    expect_gone(view)
    expect_in_set(panel, job, None)


def set_token(panel: Locator, token: int) -> None:
    box = panel.locator(".widget-text input[type='number']")
    box.fill(str(token))
    box.press("Enter")  # IntText sends its value on Enter (or on blur)


def test_centre_fence_panel_refuses_the_stale_token(
    ran: Callable[[str], Page], screenshots: Path
) -> None:
    page = ran(CENTRE)
    fence = page.locator(".emq-fence-panel")
    view = fence.locator(".emq-record-view")

    old = message(fence).inner_text()
    press(fence, "rebuild the sample row")
    expect(message(fence), "rebuild built a new sample row").not_to_have_text(
        old, timeout=UPDATE_MS)
    expect(message(fence)).to_contain_text("claimed again (token 2)")
    job = job_id_in(message(fence).inner_text())
    expect(fence).to_contain_text(f"sample row {job}: the row's attempts is 2", timeout=UPDATE_MS)
    expect_row(view, "active", "2")

    set_token(fence, 1)
    press(fence, "complete")  # the verb; each run builds a fresh sample row first
    press(fence, "run it")
    refusal = ("complete with token 1 (stale, lease held): refused EMQSTALE: token 1 is stale, "
               "the row's attempts is 2; the row is untouched")
    expect(fence.locator(".emq-message.emq-refused").first).to_contain_text(
        refusal, timeout=UPDATE_MS)
    expect_row(view, "active", "2")
    expect(view.locator("tr.emq-changed"), "the refusal changed no field").to_have_count(0)
    job = job_id_in(view.inner_text())
    expect_in_set(fence, job, "active")
    cell = page.locator(".jp-CodeCell", has=fence)
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(screenshots / "02-fence-refused.png"))

    set_token(fence, 0)
    press(fence, "run it")
    expect(message(fence)).to_contain_text("token must be at least 1, got 0",
                                           timeout=UPDATE_MS)
    expect_row(view, "active", "2")

    set_token(fence, 2)
    press(fence, "already reaped")
    press(fence, "run it")
    expect(fence.locator(".emq-message.emq-refused").first).to_contain_text(
        "token 2 holds no lease: the job is not active; the row is untouched", timeout=UPDATE_MS)
    expect_row(view, "pending", "2")

    press(fence, "still held")
    press(fence, "run it")
    expect(fence.locator(".emq-message.emq-ok").first).to_contain_text(
        "complete with token 2 (live, lease held): accepted (completed); it deleted the row and "
        "its lease", timeout=UPDATE_MS)
    expect_gone(view)
    expect(fence).to_contain_text("the row is gone", timeout=UPDATE_MS)


# -- 02 and 04: the two-workers story, step by step ---------------------------------------------

@pytest.mark.parametrize("notebook", [CENTRE, STORY])
def test_two_workers_story_step_by_step(
    ran: Callable[[str], Page], screenshots: Path, notebook: str
) -> None:
    page = ran(notebook)
    story = page.locator(".emq-two-workers")
    expect(story).to_have_count(1)
    play(story, timeout_ms=UPDATE_MS)
    log = story.locator("ol li")
    expect(log).to_have_count(len(STEPS))
    expect(log.nth(4)).to_contain_text("EMQSTALE: token 1 is stale")
    for step, _ in STEPS:  # the story is over: nothing left to press
        expect(find_button(story, BUTTON_LABELS[step])).to_have_count(0)
    cell = page.locator(".jp-CodeCell", has=story)
    cell.scroll_into_view_if_needed()
    shot = screenshots / f"{notebook[:2]}-two-workers-story.png"
    cell.screenshot(path=str(shot))
    if notebook == CENTRE and os.environ.get("ECHOMQ_UPDATE_SCREENSHOT") == "1":
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, README_SHOT)
        print(f"\nREADME screenshot updated: {README_SHOT}")
