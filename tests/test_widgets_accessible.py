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
