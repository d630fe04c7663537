"""The widgets layer: ipywidgets panels that render the lab's state and call the library.

May import the protocol core (``echomq_lab``'s top level), the lessons
(:mod:`echomq_lab.lessons`) and the labs (:mod:`echomq_lab.sim`, :mod:`echomq_lab.cluster`,
:mod:`echomq_lab.measure`); nothing below this layer imports it. :mod:`look` (colours, marks,
badges) loads no ipywidgets, so charts can use it too: a panel is imported only when it is first
named here (``from echomq_lab.widgets import RecordView``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from echomq_lab.widgets.diagram import StateDiagram as StateDiagram
    from echomq_lab.widgets.fence import FencePanel as FencePanel
    from echomq_lab.widgets.field_picker import FieldPicker as FieldPicker
    from echomq_lab.widgets.lab import LabPanel as LabPanel
    from echomq_lab.widgets.measure import MeasurePanel as MeasurePanel
    from echomq_lab.widgets.payload import PayloadRoundTrip as PayloadRoundTrip
    from echomq_lab.widgets.record_view import RecordView as RecordView
    from echomq_lab.widgets.selfcheck import SelfCheck as SelfCheck
    from echomq_lab.widgets.sets_view import SetsView as SetsView
    from echomq_lab.widgets.simulation import SimulationPanel as SimulationPanel
    from echomq_lab.widgets.transitions import TransitionPanel as TransitionPanel
    from echomq_lab.widgets.two_workers import TwoWorkersStory as TwoWorkersStory

#: Each panel class and the module that defines it.
PANELS = {
    "StateDiagram": "diagram", "FencePanel": "fence", "FieldPicker": "field_picker",
    "LabPanel": "lab", "MeasurePanel": "measure", "PayloadRoundTrip": "payload",
    "RecordView": "record_view", "SelfCheck": "selfcheck", "SetsView": "sets_view",
    "SimulationPanel": "simulation", "TransitionPanel": "transitions",
    "TwoWorkersStory": "two_workers",
}
__all__ = sorted(PANELS)


def __getattr__(name: str) -> Any:
    """A panel class, imported from its module the first time it is asked for."""
    if name not in PANELS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{PANELS[name]}"), name)
