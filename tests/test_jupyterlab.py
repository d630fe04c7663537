"""The pages in JupyterLab's interface, driven by headless Chromium: on the static site
(JupyterLite, the tab's own Python) for the pages the site carries, in a real JupyterLab for the
others (:mod:`tests.support.front_ends`; the two-workers lab runs in the app instead).

One browser serves the whole module, and one JupyterLab (on a temporary copy of
``notebooks/``) or the built ``site/`` (served from loopback, every other origin refused) the
pages (the module fixtures ``lab``, ``site_url``, ``browser`` and ``ran`` of
tests/conftest.py): each page is opened in its own tab and runs once, by itself on the site, by
Run All in JupyterLab (its stored outputs cleared first); every test below reads and clicks what
that one run drew. The tests run in file order, so those that need a page as its run left it
come before those that press it:

- on the site: no uncaught page error and no request to another origin, the page not marked
  modified by its own run; a Run All pressed before the page's own run ends (page 01) is that
  run, every cell numbered once in order; pages 00-03, in the reader's view the site opens
  them in, hold no serious or critical violation axe-core finds in the document (WCAG 2 A/AA);
  on 02 at 1200 x 800 "A claims" is in the first screen; lab 05 draws its simulation, its
  leases and the fence on and off side by side;
- 02: the two-worker story waits at step 1 (only *A claims* is on the page);
- every page: no cell raises, no widget fails to render, each widget the stored notebook
  shows is live again, a full screenshot is saved, and one safe button (see ``CLICKS``) changes
  its panel;
- 02: after A claims, A's lease runs out on screen with no further click, and B's claim waits
  for a prediction; then the story starts again; a self-check's answer shows the server's
  verdict, right or wrong; the transition panel and the fencing panel, clicked through; the
  two-workers story, step by step, down to the ``EMQSTALE`` refusal and the gone row; the
  table of contents lists its headings; a cell typed at the end (enqueue, claim with a short
  lease, reap, claim again, complete with the old token, then the new) prints ``EMQSTALE`` for
  the old token and accepts token 2;
- 02 in JupyterLab's Light and then Dark theme (switched live, ``apputils:change-theme`` from
  the Settings menu): the transition panel's Run button is reached with Tab and pressed with
  Enter, a claim and a retry follow by mouse, and the WCAG contrast of what the panel then
  shows is computed from ``getComputedStyle`` colours against the background each sits on
  (every translucent layer composited, down to the first opaque one): text at 4.5:1 or more,
  the current-state ring and the lines at 3:1 or more (WCAG 1.4.11);
- every page, last: clicking every visible, enabled button in turn (waiting for the kernel
  after each) draws no widget error, puts no traceback in a cell, and logs none in the
  notebook's log console, where JupyterLab sends what a widget callback raises.

Screenshots go to ``artifacts/screenshots/`` (or ``$ECHOMQ_SCREENSHOTS``). With
``ECHOMQ_UPDATE_SCREENSHOT=1`` the end of 02's two-workers story is also copied to
``docs/screenshot-02.png`` (the README image). Without a Chromium (or the built site, or
axe-core, for the tests that need them) the tests skip, saying why; with
``ECHOMQ_REQUIRE_BACKENDS=1`` (CI) they fail instead.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Error, Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from echomq_lab.lessons.two_workers import STEPS
from echomq_lab.widgets.record_view import GONE
from echomq_lab.widgets.two_workers import BUTTON_LABELS
from tests.support import axe, front_ends, site
from tests.support.story import SAYS, play
from tools.browser import (
    NOTEBOOK_SCROLLER,
    STDERR_OUTPUT,
    VIEWPORT,
    Lab,
    change_theme,
    find_button,
    full_lab,
    hide_sidebar,
    menu,
    notebook_screenshot,
    reader_view,
    stored_stderr,
    stored_widgets,
)
from tools.course import file_of

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
NOTEBOOKS = front_ends.files("site", "lab")
CENTRE = file_of("the-state-and-attempts")
#: The pages on the site, and those among them axe holds to the rules.
ON_SITE = front_ends.files("site")
AXE_PAGES = [f for f in ON_SITE if f in {file_of(slug) for slug in axe.PAGES}]
LAB_05 = file_of("lab-the-fence-under-load")
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
WIDGET_BUTTONS = ":is(.widget-button, .widget-toggle-button)"
LIVE_BUTTONS = f".jp-NotebookPanel:not(.lm-mod-hidden) {WIDGET_BUTTONS}"
ON_SHOW = ".jp-NotebookPanel:not(.lm-mod-hidden)"
#: The widgets' buttons in the outputs of the notebook on show.
BUTTONS = f"{ON_SHOW} .jp-OutputArea-output :is(.widget-button, .widget-toggle-button)"
#: How long one click may keep the kernel busy (a stall waits out a lease; a run takes seconds).
BUSY_MS = 120_000
SHOWN_MS = 30_000


@pytest.fixture(scope="module")
def after_run_all() -> Callable[[Page], None]:
    """Once a notebook has run (``ran``, tests/conftest.py): collapse the sidebar (for the
    screenshots) and wait for its first live button."""

    def settled(page: Page) -> None:
        hide_sidebar(page)
        page.locator(BUTTONS).first.wait_for(timeout=SHOWN_MS)

    return settled


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
    file_of("lab-the-fence-under-load"): Click(".emq-simulation", ("Run",), "every verdict holds"),
    file_of("lab-one-round-trip"): Click(
        ".emq-measure", ("measure now",), "every one an EVALSHA"),
    file_of("lab-one-queue-one-slot"): Click(
        ".emq-cluster-panel", ("enqueue", "run it"), "answered by primary"),
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
        "drift check: no drift")


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


# -- on the site, as each page's own run left it -------------------------------------------------

@pytest.mark.parametrize("name", ON_SITE)
def test_on_the_site_a_page_runs_alone_and_asks_no_other_origin(
    name: str, ran: Callable[[str], Page], site_seen: dict[str, site.Opened]
) -> None:
    """Opened and left alone, the page runs to its live panels: no uncaught page error, no
    request to another origin, the tab not marked modified by the page's own run, and the
    page still shown from its top (its own run moves from cell to cell, not the reader's
    view)."""
    page = ran(name)
    scroller = page.locator(f"{ON_SHOW} .jp-WindowedPanel-outer")
    assert scroller.evaluate("el => el.scrollTop") == 0, "the page's run scrolled the view"
    seen = site_seen[name]
    assert not [e for e in seen.errors if e.startswith("uncaught")], seen.errors
    assert seen.refused == [], f"requests to other origins: {seen.refused[:5]}"
    assert page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0
    assert page.locator(".lm-TabBar-tab.jp-mod-current").count() >= 1


def test_a_run_all_pressed_before_the_pages_run_ends_is_that_run(
    ran: Callable[[str], Page], site_seen: dict[str, site.Opened]
) -> None:
    """Run ▸ Run All pressed as soon as the menu shows, before the page's own run has ended
    (while Python starts, or while the page runs itself): that press is the page's one run,
    every cell numbered 1 to n in order (none dropped, none run twice)."""
    page = ran(site.PRESSED_EARLY)
    if site_seen[site.PRESSED_EARLY].pressed_while not in ("loading", "starting", "running"):
        pytest.skip("the page's own run had ended before the menu could be pressed")
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
    numbers = [int(m[1]) for p in prompts if (m := re.search(r"\[(\d+)\]", p))]
    assert numbers == list(range(1, len(prompts) + 1)), prompts


@pytest.mark.parametrize("name", AXE_PAGES)
def test_no_serious_or_critical_violation_on_the_site(
    name: str, ran: Callable[[str], Page]
) -> None:
    """The page as its own run left it, in the site's reader's view (what a reader opening it
    sees): axe-core (WCAG 2 A and AA) finds no serious or critical violation in the whole
    document, the site's bar and cue included, excusing nothing."""
    axe.require()
    page = ran(name)
    reader_view(page)  # (page 01's early Run All was pressed from the full JupyterLab)
    found = axe.violations(page)
    assert not found, f"{name}:\n{axe.said(found)}"


def test_lab_05_draws_its_panels_on_the_site(ran: Callable[[str], Page]) -> None:
    """Lab 05 (the simulation, its charts as SVG), run by itself on the site: the simulation
    panel, the leases and the fence on and off side by side are drawn."""
    assert front_ends.front_end(LAB_05) == "site", "lab 05 is on the site"
    page = ran(LAB_05)
    assert page.locator(".emq-simulation").count() == 1, "the simulation panel is drawn"
    assert page.locator(".emq-timeline svg .emq-lease").count() >= 2, "the leases are drawn"
    assert page.locator(".emq-side-by-side").count() == 1, "fence on and off side by side"


# -- 02, as its run left it: the story waits at step one --------------------------------------


def test_the_story_waits_at_step_one_after_its_run(ran: Callable[[str], Page]) -> None:
    page = ran(CENTRE)
    story = page.locator(f"{ON_SHOW} .emq-two-workers")
    expect(story).to_have_count(1)
    first, _title = STEPS[0]
    expect(find_button(story, BUTTON_LABELS[first]), f"{first} can be pressed").to_be_enabled()
    for step, _ in STEPS[1:]:  # later steps are not on the page yet
        expect(find_button(story, BUTTON_LABELS[step]), f"{step} is hidden").to_have_count(0)
    expect(story).to_contain_text("state pending, attempts 0, no lease")


def test_on_the_site_the_story_s_first_button_is_in_the_first_screen(
    ran: Callable[[str], Page]
) -> None:
    """02 in the site's reader's view, at 1200 x 800, scrolled to its top: "A claims" (a
    ``<button>``) is in the first screen, and the page's first heading is its title."""
    page = ran(CENTRE)
    size = page.viewport_size
    page.set_viewport_size(site.READER_VIEWPORT)
    try:
        page.locator(NOTEBOOK_SCROLLER).evaluate("el => { el.scrollTop = 0; }")
        expect(page.locator(f"{ON_SHOW} h1").first).to_have_text(re.compile(
            r"^The state and attempts"))
        claim = page.get_by_role("button", name="A claims", exact=True)
        expect(claim).to_be_visible()
        assert claim.evaluate("el => el.tagName") == "BUTTON"
        box = claim.bounding_box()
        assert box is not None
        assert box["y"] >= 0 and box["y"] + box["height"] <= site.READER_VIEWPORT["height"], box
    finally:
        if size:
            page.set_viewport_size(size)


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
    checks = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .emq-selfcheck")
    if click is None and buttons and buttons == checks.locator(WIDGET_BUTTONS).count():
        # A page whose only buttons are its self-checks (a new page's starter questions, say):
        # one choice pressed is graded by the server, right or not.
        first = checks.first
        assert "The server:" not in first.inner_text(), f"{name}: a check shown answered"
        first.locator(WIDGET_BUTTONS).first.click()
        expect(first, f"{name}: a self-check graded").to_contain_text(
            re.compile(r"Right\. The server:|Not this one"), timeout=UPDATE_MS)
        no_widget_errors(page, name)
        return
    if click is None:
        assert buttons == 0, (
            f"{name} has {buttons} live buttons but no entry in CLICKS (tests/test_jupyterlab.py): "
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


# -- 02 and 04: the story's lease runs out by itself; 02: a self-check -------------------------


def test_after_a_claims_the_lease_runs_out_with_no_further_click(
    ran: Callable[[str], Page]
) -> None:
    page = ran(CENTRE)
    story = page.locator(f"{ON_SHOW} .emq-two-workers")
    find_button(story, BUTTON_LABELS["a_claims"]).click()
    expect(story.locator(".emq-lease-bar")).to_have_count(1, timeout=SHOWN_MS)
    expect(story).to_contain_text("left", timeout=SHOWN_MS)  # the bar drains...
    # ...and the front-end clock, not a click, takes the stall once A's deadline has passed
    expect(story).to_contain_text("lease ran out", timeout=SHOWN_MS)
    expect(find_button(story, BUTTON_LABELS["reaper_returns"])).to_be_enabled(timeout=SHOWN_MS)
    find_button(story, BUTTON_LABELS["reaper_returns"]).click()
    # B's claim is taken by the reader's pick: no button runs it before the reader commits
    expect(story).to_contain_text("Which token does B get?", timeout=SHOWN_MS)
    expect(find_button(story, BUTTON_LABELS["b_claims"])).to_have_count(0)
    find_button(story, "2").click()
    expect(story).to_contain_text(SAYS["b_claims"], timeout=SHOWN_MS)
    find_button(story, "start again").click()  # the story is at step one for the tests below
    expect(find_button(story, BUTTON_LABELS["a_claims"])).to_be_enabled(timeout=SHOWN_MS)


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
        "token 2 holds no lease: the job is not active (the lab's check, beyond the course's "
        "token); the row is untouched", timeout=UPDATE_MS)
    expect_row(view, "pending", "2")

    press(fence, "still held")
    press(fence, "run it")
    expect(fence.locator(".emq-message.emq-ok").first).to_contain_text(
        "complete with token 2 (live, lease held): accepted (completed); it deleted the row and "
        "its lease", timeout=UPDATE_MS)
    expect_gone(view)
    expect(fence).to_contain_text("the row is gone", timeout=UPDATE_MS)


# -- 02 and 04: the two-workers story, step by step ---------------------------------------------

def test_two_workers_story_step_by_step(ran: Callable[[str], Page], screenshots: Path) -> None:
    notebook = CENTRE
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


def test_a_self_check_answer_shows_the_servers_verdict(ran: Callable[[str], Page]) -> None:
    page = ran(CENTRE)
    check = page.locator(f"{ON_SHOW} .emq-selfcheck").filter(has_text="reprocessed")
    expect(check).to_have_count(1)
    message = check.locator(".widget-html").last
    assert "The server" not in check.inner_text(), "the question was shown answered"
    find_button(check, "(a) 1").click()
    expect(check).to_contain_text("Not this one", timeout=SHOWN_MS)
    expect(check).to_contain_text("The server:")
    find_button(check, "(c) 4").click()
    expect(message).to_contain_text("Right.", timeout=SHOWN_MS)
    expect(check).to_contain_text("attempts=4")  # what the server's row held after the claim


@pytest.mark.parametrize("name", AXE_PAGES)
def test_after_a_press_the_focus_stays_and_the_verdict_is_announced(
    name: str, ran: Callable[[str], Page]
) -> None:
    """Pages 00-03 on the site, in the reader's view: the first self-check's first choice,
    pressed from the keyboard (focused, Enter), keeps the keyboard's focus on its panel, its
    verdict shows in a live region (a screen reader says it), the focused button wears a
    focus ring of 2 px or more at 3:1 or more against the page, and axe-core (WCAG 2 A/AA)
    then finds no serious or critical violation in the document."""
    axe.require()
    page = ran(name)
    reader_view(page)
    read = axe.press_first(page, timeout_ms=BUSY_MS)
    print(f"\n{name}: pressed {read['pressed']!r}; focus on {read['focused']!r}; verdict "
          f"({read['live']}): {read['verdict'][:80]!r}; ring {read['ring']}")
    assert not axe.press_problems(read), f"{name}: {axe.press_problems(read)}"
    found = axe.violations(page)
    assert not found, f"{name} after a press:\n{axe.said(found)}"


# -- 02 in the Light and the Dark theme: readable, and usable from the keyboard -----------------

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
#: WCAG 2.1 AA: text (1.4.3) and graphical objects such as lines and rings (1.4.11).
TEXT_AA, GRAPHIC_AA = 4.5, 3.0

#: In the page: ``contrast(element, property)`` gives the colour ``property`` of ``element``
#: composited over the background it sits on, that background, and their WCAG ratio. Colours are
#: read through a canvas, so any CSS colour syntax the browser computes (rgb(), color(srgb ...))
#: becomes sRGB bytes.
CONTRAST_JS = """
([el, prop]) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const rgba = (css) => {
        ctx.fillStyle = '#010203';
        ctx.fillStyle = css;
        if (ctx.fillStyle === '#010203' && css.replace(/\\s/g, '') !== 'rgb(1,2,3)') {
            throw new Error('cannot read the colour ' + css);
        }
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillRect(0, 0, 1, 1);
        const d = ctx.getImageData(0, 0, 1, 1).data;
        return [d[0], d[1], d[2], d[3] / 255];
    };
    const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3]));
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
        const bg = rgba(getComputedStyle(node).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
    }
    let bg = [255, 255, 255];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    const fgCss = getComputedStyle(el)[prop];
    const fg = over(rgba(fgCss), bg);
    const lum = (c) => {
        const [r, g, b] = c.map(v => v / 255).map(
            v => v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    return {fg: fg.map(Math.round), bg: bg.map(Math.round), css: fgCss,
            ratio: (hi + 0.05) / (lo + 0.05)};
}
"""


def contrast(target: Locator, prop: str) -> dict[str, object]:
    """The WCAG contrast of ``target``'s colour ``prop`` against its effective background."""
    expect(target.first, f"{target} is on the page").to_be_attached(timeout=UPDATE_MS)
    found: dict[str, object] = target.first.evaluate(
        f"(el, prop) => ({CONTRAST_JS})([el, prop])", prop
    )
    return found


def tab_to_control(page: Page, target: Locator, most: int = 25) -> None:
    """Press Tab until ``target`` has the keyboard focus (at most ``most`` presses)."""
    for _ in range(most):
        if target.evaluate("el => el === document.activeElement"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{most} presses of Tab never reached {target}")


@pytest.mark.parametrize("key", list(THEMES))
def test_the_centre_page_reads_well_and_works_from_the_keyboard(
    key: str, ran: Callable[[str], Page], screenshots: Path
) -> None:
    page = ran(CENTRE)
    change_theme(page, THEMES[key])
    assert page.evaluate("document.body.dataset.jpThemeName") == THEMES[key]

    panel = page.locator(".emq-transition-panel")
    expect(panel).to_have_count(1)
    picker = find_button(panel, "enqueue")
    picker.click()  # pick the transition, then go on from the keyboard alone
    run = find_button(panel, "Run")
    tab_to_control(page, run)
    page.keyboard.press("Enter")
    message = panel.locator(".emq-message").first
    expect(message).to_contain_text("enqueue wrote state=pending, attempts=0", timeout=UPDATE_MS)

    diagram = panel.locator(".emq-state-diagram")
    expect(diagram.locator("path.emq-edge-lit")).to_have_attribute("data-transition", "enqueue")
    expect(diagram.locator("text.emq-edge-label-lit")).to_have_text("enqueue")
    # By mouse: claim a job (the oldest pending one: the panel then follows it), and retry it,
    # which changes the row's state, so the record view lights that field.
    for name in ("claim", "retry"):
        find_button(panel, name).click()
        run.click()
        said = re.compile(rf"^\W*{name} (with token \d+ )?wrote state=")
        expect(message).to_contain_text(said, timeout=UPDATE_MS)
        expect(diagram.locator("text.emq-edge-label-lit")).to_have_text(name)
    expect(diagram.locator("rect.emq-current")).to_have_count(1)
    changed = panel.locator(".emq-record-view tr.emq-changed")
    expect(changed.first).to_be_visible(timeout=UPDATE_MS)

    checks: list[tuple[str, Locator, str, float]] = [
        ("the lit edge label", diagram.locator("text.emq-edge-label-lit"), "fill", TEXT_AA),
        ("the current-state ring", diagram.locator("rect.emq-current"), "stroke", GRAPHIC_AA),
        ("a highlighted row's text", changed.locator("td").first, "color", TEXT_AA),
        ("a resting edge label", diagram.locator("text.emq-edge-label:not(.emq-edge-label-lit)"),
         "fill", TEXT_AA),
        ("a resting edge", diagram.locator("path.emq-edge:not(.emq-edge-lit)"), "stroke",
         GRAPHIC_AA),
        ("the lit edge", diagram.locator("path.emq-edge-lit"), "stroke", GRAPHIC_AA),
        ("the message line", message, "color", TEXT_AA),
        ("a state badge's name", panel.locator(".emq-state"), "color", TEXT_AA),
    ]
    shot = notebook_screenshot(page, screenshots / f"02-theme-{key}.png")
    print(f"\n{THEMES[key]}: screenshot {shot}")
    failed = []
    for what, target, prop, floor in checks:
        found = contrast(target, prop)
        ratio = float(str(found["ratio"]))
        print(f"  {what}: {ratio:.2f}:1 ({prop} {found['css']} over rgb{tuple(found['bg'])})")
        if ratio < floor:
            failed.append(f"{what}: {ratio:.2f}:1 < {floor}:1 ({found})")
    assert not failed, f"{THEMES[key]}: " + "; ".join(failed)


# -- 02: the table of contents, and a cell typed at the end ------------------------------------

TYPED = '''from echomq_lab import branded, connect, jobs
from echomq_lab.errors import StaleToken
import time
c = connect(); q = "typed"; job = branded.mint("JOB")
print(jobs.enqueue(c, q, job, b"typed by hand"))
first = jobs.claim(c, q, 50); time.sleep(0.2); print("reaped", jobs.reap(c, q))
second = jobs.claim(c, q, 60_000); print("tokens", first.token, second.token)
try:
    jobs.complete(c, q, job, first.token)
except StaleToken as exc:
    print("old token:", exc)
print("token", second.token, jobs.complete(c, q, job, second.token))
'''


def test_the_table_of_contents_lists_the_headings(ran: Callable[[str], Page]) -> None:
    page = ran(CENTRE)
    full_lab(page)  # (on the site: its sidebar is JupyterLab's, one click off the reader's view)
    page.locator(".jp-SideBar .lm-TabBar-tab[data-id='table-of-contents']").click()
    toc = page.locator(".jp-TableOfContents-content")
    toc.get_by_text("Two workers, one job").first.wait_for(timeout=UPDATE_MS)
    assert toc.get_by_text("The fencing check").count() >= 1
    hide_sidebar(page)


def test_a_typed_cell_meets_the_fence(ran: Callable[[str], Page]) -> None:
    """Enqueue, claim (short lease), reap, claim again, complete old then new token (on the
    site, from its full JupyterLab: the reader's view folds the code)."""
    page = ran(CENTRE)
    full_lab(page)
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.insert_text(TYPED)
    page.keyboard.press("Shift+Enter")
    typed = page.locator(".jp-CodeCell").filter(has_text="typed by hand").last
    output = typed.locator(".jp-OutputArea-output")
    output.filter(has_text="completed").first.wait_for(timeout=UPDATE_MS)
    joined = "\n".join(output.all_inner_texts())
    assert "reaped 1" in joined and "tokens 1 2" in joined, joined
    assert "old token: EMQSTALE: token 1 is stale" in joined, joined
    assert "token 2 completed" in joined, joined


# -- every notebook, last: every visible button clicks cleanly ---------------------------------


def settle(page: Page) -> None:
    """Wait until the kernel has handled what the last click sent it."""
    try:
        page.get_by_text("| Busy").first.wait_for(timeout=500)
    except Error:
        pass  # it may have been quicker than the look
    page.get_by_text("| Idle").first.wait_for(timeout=BUSY_MS)


def log_console_text(page: Page) -> str:
    """The text of the notebook's log console (opened from the View menu)."""
    menu(page, "View", "logconsole:open")
    panel = page.locator(".jp-LogConsolePanel")
    panel.first.wait_for(timeout=SHOWN_MS)
    return panel.first.inner_text()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_visible_button_clicks_cleanly(name: str, ran: Callable[[str], Page]) -> None:
    page = ran(name)
    full_lab(page)  # (on the site: the kernel's state shows in JupyterLab's status bar)
    buttons = page.locator(BUTTONS)
    count = buttons.count()
    assert count > 0, f"{name}: no live widget button after Run All"
    stderr_before = page.locator(STDERR_OUTPUT).count()
    clicked = []
    for i in range(count):
        it = buttons.nth(i)
        if not it.is_visible() or not it.is_enabled():
            continue
        label = it.inner_text().strip()
        it.scroll_into_view_if_needed()
        try:
            it.click(timeout=10_000)
        except PlaywrightTimeout:
            # A button may disable itself between the look and the click (a Stop button
            # whose run just ended): that is the widget working, not a broken click.
            if it.is_enabled():
                raise
            continue
        clicked.append(label)
        settle(page)
    assert clicked, f"{name}: {count} buttons, none visible and enabled"
    assert page.get_by_text("Error displaying widget").count() == 0, name
    assert page.locator(BROKEN_WIDGET).count() == 0, f"{name}: a widget drawn as an error"
    assert page.locator(STDERR_OUTPUT).count() == stderr_before, (
        f"{name}: a click put output on stderr:\n{page.locator(STDERR_OUTPUT).last.inner_text()}")
    logged = log_console_text(page)
    assert "Traceback" not in logged and "Error" not in logged, (
        f"{name}: after clicking {len(clicked)} buttons the log console holds:\n{logged[-3000:]}")
    print(f"\n{name}: clicked {len(clicked)} of {count} buttons, no error")


def test_in_jupyterlab_a_page_opens_unmodified_and_says_how_it_comes_alive(
    lab: Lab, browser: Browser
) -> None:
    """The centre page opened in JupyterLab, nothing pressed: once its kernel has started
    (JupyterLab then writes the kernel's name into the page), its tab is not marked modified;
    and the page's second cell tells the reader that Run All brings its panels alive."""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.goto(lab.notebook_url(CENTRE, workspace="opens-unmodified"))
        page.locator(".jp-Notebook .jp-Cell").nth(1).wait_for(timeout=SHOWN_MS)
        expect(page.locator(".jp-Notebook .jp-Cell").nth(1)).to_contain_text(
            "Run ▸ Run All Cells brings this page's panels alive")
        expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")
               .or_(page.locator("#jp-main-statusbar").get_by_text("Idle")).first
               ).to_be_attached(timeout=SHOWN_MS)
        page.wait_for_timeout(3_000)  # JupyterLab writes the kernel's name a moment after
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, (
            f"{CENTRE} is marked modified right after opening")
    finally:
        page.close()
