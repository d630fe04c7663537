"""ipywidgets panels for the lab. Each panel owns its widgets and calls the library."""

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
