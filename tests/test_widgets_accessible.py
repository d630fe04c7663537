"""Every control of every panel says what it does, and no state is told by colour alone.

Each panel class of ``echomq_lab.widgets`` (found by walking the package, so a new panel is not
missed) is built on the embedded server, and its widget tree is walked: a button must carry
words (its label or its tooltip), a toggle group a description or tooltips, and every input
(text, number, slider, checkbox, dropdown, ...) a description naming what it sets. A panel
class with no entry in ``BUILD`` fails its test: add how to build it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterator

import ipywidgets as W
import pytest
import redis

import echomq_lab.widgets as widgets_pkg
from echomq_lab import connection
from echomq_lab.widgets import look as style
from echomq_lab.widgets import look as theme
from echomq_lab.widgets.base import Panel

Q = "a11y"


def fresh() -> redis.Redis:
    return connection.connect(fresh=True)


#: How to build each panel for the walk (a connection and a queue of its own).
BUILD: dict[str, Callable[[], object]] = {
    "FieldPicker": lambda: widgets_pkg.FieldPicker(fresh(), Q, sample=True),
    "PayloadRoundTrip": lambda: widgets_pkg.PayloadRoundTrip(fresh(), Q),
    "RecordView": lambda: widgets_pkg.RecordView(fresh(), Q),
    "SetsView": lambda: widgets_pkg.SetsView(fresh(), Q),
    "StateDiagram": lambda: widgets_pkg.StateDiagram("pending"),
    "FencePanel": lambda: widgets_pkg.FencePanel(fresh(), Q),
    "LabPanel": lambda: widgets_pkg.LabPanel(fresh(), Q),
    "TransitionPanel": lambda: widgets_pkg.TransitionPanel(fresh(), Q),
    "TwoWorkersStory": lambda: widgets_pkg.TwoWorkersStory(fresh(), Q),
    "ClusterPanel": lambda: importlib.import_module("echomq_lab.widgets.cluster").ClusterPanel(
        fresh(), Q
    ),
    "MeasurePanel": lambda: widgets_pkg.MeasurePanel(fresh(), Q),
    "SelfCheck": lambda: widgets_pkg.SelfCheck.page(fresh(), "the-state-and-attempts")[0],
    "SimulationPanel": lambda: widgets_pkg.SimulationPanel(),
    # the workshop's panels, in their practice room on the embedded server
    "LearnerPanel": lambda: importlib.import_module("echomq_lab.widgets.classroom").LearnerPanel(),
    "BoardPanel": lambda: importlib.import_module("echomq_lab.widgets.classroom").board_from(),
}


def panel_classes() -> list[type[Panel]]:
    """Every subclass of Panel defined in a module of echomq_lab.widgets (imported here)."""
    for info in pkgutil.walk_packages(widgets_pkg.__path__, widgets_pkg.__name__ + "."):
        importlib.import_module(info.name)
    found: list[type[Panel]] = []
    todo: list[type[Panel]] = [Panel]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith(widgets_pkg.__name__ + "."):
                found.append(sub)
    return sorted(set(found), key=lambda c: c.__name__)


def walk(widget: W.Widget) -> Iterator[W.Widget]:
    """``widget`` and every widget inside it (Box children, and a panel's own widgets)."""
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


#: Inputs: widgets whose value the reader sets (a button's "value" is not one).
INPUTS = (
    W.Text, W.Textarea, W.IntText, W.FloatText, W.BoundedIntText, W.BoundedFloatText,
    W.IntSlider, W.FloatSlider, W.IntRangeSlider, W.Checkbox, W.Dropdown, W.Select,
    W.SelectMultiple, W.RadioButtons, W.Combobox, W.ToggleButton,
)  # fmt: skip


def problems(widget: W.Widget) -> list[str]:
    """What is missing on the controls inside ``widget`` (empty: every control says its job)."""
    found = []
    for w in walk(widget):
        name = type(w).__name__
        if isinstance(w, W.Button):
            if not (w.description.strip() or w.tooltip):
                found.append(f"a {name} with neither a label nor a tooltip")
        elif isinstance(w, W.ToggleButtons):
            if not (w.description.strip() or any(t.strip() for t in w.tooltips)):
                found.append(f"a {name} {list(w.options)} with no description or tooltips")
        elif isinstance(w, INPUTS):
            if not (w.description.strip() or w.tooltip):
                found.append(f"a {name} (value {w.value!r}) with no description")
    return found


CLASSES = panel_classes()


def test_the_walk_finds_the_panels() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"TransitionPanel", "TwoWorkersStory", "FencePanel"} <= names, names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_control_says_what_it_does(cls: type[Panel]) -> None:
    build = BUILD.get(cls.__name__)
    assert build is not None, (
        f"{cls.__name__} has no entry in BUILD (tests/test_widgets_accessible.py): add one")
    panel = build()
    assert isinstance(panel, cls)
    kinds = (W.Button, W.ToggleButtons, *INPUTS)
    controls = [w for w in walk(panel.widget) if isinstance(w, kinds)]
    assert not problems(panel.widget), f"{cls.__name__}: {problems(panel.widget)}"
    print(f"{cls.__name__}: {len(controls)} controls, each labelled")


def test_the_walk_catches_an_unlabelled_control() -> None:
    box = W.VBox([W.HBox([W.Button(description="ok"), W.Button(icon="play")]), W.IntText(3)])
    assert problems(box) == [
        "a Button with neither a label nor a tooltip",
        "a IntText (value 3) with no description",
    ]


@pytest.mark.parametrize("state", sorted(theme.STATE_COLOURS))
def test_a_state_badge_names_its_state_in_words(state: str) -> None:
    """The badge's colour is never the only sign: its text is the state's name."""
    badge = style.state_badge(state)
    assert re.sub(r"<[^>]+>", "", badge) == state


@pytest.mark.parametrize("ok", [True, False, None])
def test_a_verdict_line_carries_a_mark_and_words(ok: bool | None) -> None:
    """Green and red lines also differ by their mark (✓ / ✗ / –), not by colour alone."""
    text = re.sub(r"<[^>]+>", "", style.message_html("done", ok))
    assert text == f"{theme.VERDICTS[ok].mark} done"
    assert len({v.mark for v in theme.VERDICTS.values()}) == len(theme.VERDICTS)


# -- a press: the focus and the verdict ------------------------------------------------------------

#: The panels of pages 00-04, and how to press each once as a reader would (a button's label).
PRESSES: dict[str, str] = {
    "SelfCheck": "(a)", "FieldPicker": "re-read the sample row", "TransitionPanel": "Run",
    "FencePanel": "run it", "TwoWorkersStory": "A claims", "LabPanel": "enqueue",
    "PayloadRoundTrip": "round-trip the samples",
}


def _shown(panel: Panel, widget: W.Widget) -> bool:
    """True when ``widget`` is inside the panel's tree and no box on its way hides it."""
    def path(node: W.Widget) -> list[W.Widget] | None:
        if node is widget:
            return [node]
        for child in getattr(node, "children", ()):
            if (found := path(child)) is not None:
                return [node, *found]
        return None
    way = path(panel.widget)
    return way is not None and all(w.layout.display != "none" for w in way)


@pytest.mark.parametrize("name", sorted(PRESSES))
def test_after_a_press_the_focus_is_on_an_open_control_and_the_verdict_is_live(
    name: str,
) -> None:
    """A press never leaves the focus on nothing: the pressed button is never disabled by the
    press itself, and when the press closed it or took it off the panel, the focus moves to an
    open control on show; the line the verdict is said on is a polite live region."""
    panel = BUILD[name]()
    assert isinstance(panel, Panel)
    button = next(w for w in walk(panel.widget) if isinstance(w, W.Button)
                  and w.description.startswith(PRESSES[name]))
    disabled_during: list[bool] = []
    line = getattr(panel, "message", None)
    if isinstance(line, W.HTML):
        line.observe(lambda _c: disabled_during.append(button.disabled), names="value")
    button.click()
    assert not any(disabled_during), f"{name}: the pressed button was disabled during the press"
    focused = panel.focused
    assert isinstance(focused, W.Button), f"{name}: focus on {focused!r}"
    assert not focused.disabled and _shown(panel, focused), (
        f"{name}: the focus went to {focused.description!r}, closed or not on show")
    said = [w.value for w in walk(panel.widget) if isinstance(w, W.HTML)
            and ('class="emq-message' in w.value or 'class="emq-sample' in w.value)]
    assert said, f"{name}: no verdict line after the press"
    assert all('role="status"' in v and 'aria-live="polite"' in v for v in said), said


def test_the_story_moves_the_focus_to_what_comes_next() -> None:
    """In the story a step's button leaves the panel once taken: the focus goes to the control
    that replaced it (the next step, or the first choice still open after a wrong pick)."""
    story = widgets_pkg.TwoWorkersStory(fresh(), Q + "-focus", lease_ms=60)
    story.buttons["a_claims"].click()
    assert story.focused is story.ticker.button  # A's lease drains: the clock's button is next
    story.press("a_stalls")
    story.buttons["reaper_returns"].click()
    assert story.focused is story.choices["b_claims"][0]  # B's question, its first choice
    story.choices["b_claims"][0].click()  # "1": wrong, closed
    assert story.focused is story.choices["b_claims"][1] and not story.focused.disabled
