"""StateDiagram: the job lifecycle as an inline SVG, the transition just taken lit. The edges
are the registry's (:mod:`echomq_lab.transitions`), placed by :data:`LAYOUT`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as W  # type: ignore[import-untyped]

from echomq_lab import transitions
from echomq_lab.transitions import RETIRED, START
from echomq_lab.widgets import look as style
from echomq_lab.widgets.base import Panel

NODE_W, NODE_H = 110, 36
#: Text sizes in the SVG's units. The diagram is drawn at its panel's width (470 px in the
#: transition panel, 0.64 of the 740 units), so 19 units render at about 12 px.
LABEL_SIZE, NODE_TEXT_SIZE = 19, 19
#: Centre of each node in the SVG's coordinates.
NODES: dict[str, tuple[int, int]] = {
    "pending": (190, 160),
    "scheduled": (340, 50),
    "active": (490, 160),
    "dead": (340, 270),
    RETIRED: (670, 160),
}
#: Resting and lit lines and labels, in the theme's text colours so they read in Light and Dark.
DIM, LIT = style.SOFT, style.INK_ON_PAGE

#: Each arrow's SVG path and the point its label is centred on, keyed by the (source, target)
#: states of a registry edge.
LAYOUT: dict[tuple[str, str], tuple[str, tuple[int, int]]] = {
    (START, "pending"): ("M 50 160 L 133 160", (92, 150)),
    (START, "scheduled"): ("M 47 152 L 283 56", (150, 88)),
    ("pending", "active"): ("M 245 151 L 433 151", (339, 144)),
    ("active", "pending"): ("M 435 170 L 247 170", (339, 186)),
    ("active", "scheduled"): ("M 458 136 L 372 71", (432, 96)),
    ("active", "dead"): ("M 458 184 L 372 249", (470, 226)),
    ("scheduled", "pending"): ("M 310 68 L 220 139", (298, 114)),
    ("dead", "pending"): ("M 308 252 L 220 182", (222, 232)),
    ("active", RETIRED): ("M 551 160 L 612 160", (582, 150)),
    ("active", "active"): ("M 500 135 C 485 90, 550 90, 532 133", (517, 88)),
}


@dataclass(frozen=True)
class Edge:
    """One drawn transition: its label, the names it stands for (the transition's, then its
    handles', e.g. ``schedule`` for ``enqueue_in``), its ends and its geometry."""

    label: str
    names: tuple[str, ...]
    source: str
    target: str
    path: str
    label_at: tuple[int, int]


def _drawn(name: str, edge: transitions.Edge) -> Edge:
    names = tuple(dict.fromkeys((name, *transitions.get(name).handle_names)))
    return Edge(edge.label, names, edge.source, edge.target, *LAYOUT[(edge.source, edge.target)])


#: Every arrow the diagram draws, one per edge of the registry, in registry order.
EDGES: tuple[Edge, ...] = tuple(_drawn(name, edge) for name, edge in transitions.EDGES)


def find_edge(name: str, source: str, target: str) -> Edge | None:
    """The drawn edge for transition ``name`` taken from ``source`` to ``target``, if any."""
    ends = (source, target)
    return next((e for e in EDGES if name in e.names and (e.source, e.target) == ends), None)


def _marker(mid: str, colour: str, size: int) -> str:
    return (
        f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="{size}" '
        f'markerHeight="{size}" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path d="M 0 0 L 10 5 L 0 10 z" style="fill:{colour}"/></marker>'
    )


def render_svg(current: str | None, lit: Edge | None) -> str:
    """The diagram as SVG text, ``current`` ringed and ``lit`` drawn bold."""
    parts = [
        '<svg class="emq-diagram" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 740 310" '
        'width="100%" '
        f'style="max-width:740px;font-family:sans-serif;font-size:{LABEL_SIZE}px">',
        "<defs>" + _marker("emq-arrow-dim", DIM, 9) + _marker("emq-arrow-lit", LIT, 13) + "</defs>",
        f'<circle cx="40" cy="160" r="9" style="fill:{style.SOFT}"/>',
        f'<text x="40" y="185" text-anchor="middle" style="fill:{style.SOFT}">new</text>',
    ]
    for edge in EDGES:
        look, colour, width, weight = (
            ("lit", LIT, 3.5, "bold") if edge is lit else ("dim", DIM, 1.5, "normal"))
        lit_class = " emq-edge-lit" if edge is lit else ""
        lit_label = " emq-edge-label-lit" if edge is lit else ""
        label = html.escape(edge.label)
        parts.append(
            f'<path class="emq-edge{lit_class}" data-transition="{label}" d="{edge.path}" '
            f'fill="none" style="stroke:{colour}" stroke-width="{width}" '
            f'marker-end="url(#emq-arrow-{look})"/>'
        )
        x, y = edge.label_at
        turn = f' transform="rotate(-22 {x} {y})"' if edge.source == START and y < 150 else ""
        parts.append(
            f'<text class="emq-edge-label{lit_label}" x="{x}" '
            f'y="{y}"{turn} text-anchor="middle" font-weight="{weight}" '
            f'style="fill:{colour}">{label}</text>'
        )
    for state, (cx, cy) in NODES.items():
        x, y = cx - NODE_W // 2, cy - NODE_H // 2
        if state == current:
            parts.append(
                f'<rect class="emq-current" x="{x - 6}" y="{y - 6}" width="{NODE_W + 12}" '
                f'height="{NODE_H + 12}" rx="12" fill="none" style="stroke:{LIT}" '
                'stroke-width="2.5" stroke-dasharray="5 3"/>'
            )
        parts.append(
            f'<rect class="emq-node emq-node-{state}" x="{x}" y="{y}" width="{NODE_W}" '
            f'height="{NODE_H}" rx="8" fill="{style.STATE_COLOURS[state]}"/>'
            f'<text x="{cx}" y="{cy + 6}" text-anchor="middle" fill="white" '
            f'font-family="monospace" font-size="{NODE_TEXT_SIZE}">{state}</text>'
        )
    cx, cy = NODES[RETIRED]
    parts.append(
        f'<text x="736" y="{cy + NODE_H + 4}" text-anchor="end" style="fill:{style.SOFT}">'
        "(the row is deleted)</text></svg>"
    )
    return "".join(parts)


class StateDiagram(Panel):
    """The lifecycle diagram. ``update(current, taken)`` rings the state and lights the edge;
    ``taken`` is ``(transition, before, after)`` (``start`` before an enqueue)."""

    def __init__(self, current: str | None = None) -> None:
        self.current: str | None = None
        self.taken: tuple[str, str, str] | None = None
        self.lit: Edge | None = None
        self.svg = W.HTML(layout=W.Layout(width="100%", overflow="hidden"))
        self.widget = W.VBox([self.svg], layout=W.Layout(width="100%", max_width="760px",
                                                         overflow="hidden"))
        self.widget.add_class("emq-state-diagram")
        self.update(current)

    def update(self, current: str | None, taken: tuple[str, str, str] | None = None) -> None:
        """Ring ``current`` (None: no job) and light the edge of ``taken`` if it is drawn.

        A state the diagram does not know (another client wrote ``paused``, say) rings no node
        and :meth:`text` names it; a transition that moved nothing lights no edge. Never raises.
        """
        self.current = current
        self.taken = taken
        self.lit = find_edge(*taken) if taken is not None else None
        self.svg.value = render_svg(current if current in NODES else None, self.lit)

    def text(self) -> str:
        """The current state and the transition just taken, in words."""
        where = self.current or "no job"
        if self.current is not None and self.current not in NODES:
            where = f"{self.current!r} (no such state on the diagram: no node is ringed)"
        line = f"state diagram: current state = {where}"
        if self.taken is not None:
            name, before, after = self.taken
            if self.lit is not None:
                line += f"; lit: {self.lit.label} ({before} -> {after})"
            else:
                line += f"; {name} moved nothing ({before})"
        return line
