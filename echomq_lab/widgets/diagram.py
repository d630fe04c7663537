"""StateDiagram: the job lifecycle as an inline SVG, the transition just taken lit. The edges
are the registry's (:mod:`echomq_lab.transitions`), every one of them: placed by its entry or
by :data:`LAYOUT`, or else laid out here (:func:`route`).
"""

from __future__ import annotations

import html
import itertools
import re
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

#: The arrows placed by hand: each one's SVG path and the point its label is centred on, keyed
#: by the (source, target) states of a registry edge. An edge may carry its own (``path`` and
#: ``label_at`` in its entry); any other edge is laid out by :func:`route`.
LAYOUT: dict[tuple[str, str], tuple[str, tuple[int, int]]] = {
    (START, "pending"): ("M 50 160 L 133 160", (92, 150)),
    (START, "scheduled"): ("M 47 152 L 283 56", (174, 84)),
    ("pending", "active"): ("M 245 151 L 433 151", (339, 144)),
    ("active", "pending"): ("M 435 170 L 247 170", (339, 186)),
    ("active", "scheduled"): ("M 458 136 L 372 71", (432, 96)),
    ("active", "dead"): ("M 458 184 L 372 249", (470, 226)),
    ("scheduled", "pending"): ("M 310 68 L 220 139", (298, 114)),
    ("dead", "pending"): ("M 308 252 L 220 182", (222, 232)),
    ("active", RETIRED): ("M 551 160 L 612 160", (582, 136)),
    ("active", "active"): ("M 500 135 C 485 90, 550 90, 532 133", (517, 88)),
}
#: The diagram's drawing area, in the SVG's units (it grows downward when a computed arrow
#: needs the room: :func:`height`).
WIDTH, HEIGHT = 740, 310
#: The note under the retired node, its text and the room it takes.
NOTE = "(the row is deleted)"
NOTE_BOX: Box = (WIDTH - 4 - len(NOTE) * LABEL_SIZE * 0.55, NODES[RETIRED][1] + NODE_H - 12,
                 WIDTH - 4, NODES[RETIRED][1] + NODE_H + 8)
#: Where a new job comes from: the small circle left of pending.
START_AT = (40, 160)

Point = tuple[float, float]
Box = tuple[float, float, float, float]  # left, top, right, bottom


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


def node_box(state: str, margin: float = 0) -> Box:
    """The rectangle of ``state``'s node (the start circle's square for :data:`START`)."""
    if state == START:
        (x, y), half_w, half_h = START_AT, 9.0, 9.0
    else:
        (x, y), half_w, half_h = NODES[state], NODE_W / 2, NODE_H / 2
    return (x - half_w - margin, y - half_h - margin, x + half_w + margin, y + half_h + margin)


def label_box(label: str, at: tuple[float, float]) -> Box:
    """The room a horizontal label centred on ``at`` takes (an estimate from its length)."""
    half = len(label) * LABEL_SIZE * 0.29
    x, y = at
    return (x - half, y - LABEL_SIZE * 0.8, x + half, y + LABEL_SIZE * 0.25)


def _inside(p: Point, box: Box) -> bool:
    return box[0] <= p[0] <= box[2] and box[1] <= p[1] <= box[3]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _centre(state: str) -> Point:
    return START_AT if state == START else NODES[state]


def _at(points: list[Point], t: float) -> Point:
    """The Bezier curve with control ``points`` at ``t`` (de Casteljau)."""
    while len(points) > 1:
        points = [(p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t)
                  for p, q in itertools.pairwise(points)]
    return points[0]


def _split(points: list[Point], t: float) -> tuple[list[Point], list[Point]]:
    """The control points of the curve's two parts, before and after ``t`` (de Casteljau)."""
    left, right, row = [points[0]], [points[-1]], points
    while len(row) > 1:
        row = [(p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t)
               for p, q in itertools.pairwise(row)]
        left.append(row[0])
        right.append(row[-1])
    return left, right[::-1]


def route(source: str, target: str, label: str, taken: tuple[Box, ...] = (),
          lines: tuple[Point, ...] = ()) -> tuple[str, tuple[int, int]]:
    """A path and a label point for an arrow no one placed: a curve from ``source``'s node to
    ``target``'s, bowed as little as it can be while it misses every other node and the
    ``taken`` boxes but the first (the labels; the first is the note under the retired node,
    drawn on a halo of the page's colour so a line may pass under it), its own label clear of
    the nodes, the ``taken`` boxes and the ``lines`` already drawn (points along them). The
    first bow that fits wins (the drawing grows downward if it must: :func:`height`);
    ValueError if none does (then place the edge by hand, in its entry)."""
    a, b = _centre(source), _centre(target)
    dx, dy = b[0] - a[0], b[1] - a[1]
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    normal = (-dy / length, dx / length)
    others = [node_box(s, 10) for s in (START, *NODES) if s not in (source, target)]
    along = (dx / length, dy / length)
    bows = [(step * side, lean) for step in range(0, 480, 30) for side in (1, -1)
            for lean in (0, -0.6, 0.6)]
    for bow, lean in bows:
        curve = [a, (a[0] + normal[0] * bow + along[0] * lean * abs(bow),
                     a[1] + normal[1] * bow + along[1] * lean * abs(bow)),
                 (b[0] + normal[0] * bow - along[0] * lean * abs(bow),
                  b[1] + normal[1] * bow - along[1] * lean * abs(bow)), b]
        samples = [_at(curve, i / 80) for i in range(81)]
        outside = [i for i, p in enumerate(samples)
                   if not _inside(p, node_box(source, 2)) and not _inside(p, node_box(target, 6))]
        if not outside:
            continue
        drawn = samples[outside[0] : outside[-1] + 1]
        if any(_inside(p, box) for p in drawn for box in (*others, *taken[1:])):
            continue
        if any(not (4 <= x <= WIDTH - 4 and 4 <= y) for x, y in drawn):
            continue
        away = 1 if bow >= 0 else -1
        top = _at(curve, 0.5)
        at = (round(top[0] + normal[0] * away * LABEL_SIZE * 0.9),
              round(top[1] + normal[1] * away * LABEL_SIZE * 0.9 + LABEL_SIZE * 0.3))
        box = label_box(label, at)
        if any(_overlap(box, o) for o in (*others, node_box(source), node_box(target), *taken)):
            continue
        if any(_inside(p, box) for p in lines):
            continue
        t0, t1 = outside[0] / 80, outside[-1] / 80
        part = _split(_split(curve, t1)[0], t0 / t1)[1]
        path = "M {:.0f} {:.0f} C {:.0f} {:.0f}, {:.0f} {:.0f}, {:.0f} {:.0f}".format(
            *(c for p in part for c in p))
        return path, at
    raise ValueError(f"no room to draw {source} -> {target} ({label}): give its edge a path "
                     "and label_at in its registry entry")


def _line_points(path: str) -> tuple[Point, ...]:
    """Points along a placed path (its straight runs, and a curve's control polygon)."""
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path)]
    corners = list(zip(numbers[::2], numbers[1::2], strict=True))
    points: list[Point] = []
    for (x0, y0), (x1, y1) in itertools.pairwise(corners):
        points += [(x0 + (x1 - x0) * i / 12, y0 + (y1 - y0) * i / 12) for i in range(13)]
    return tuple(points)


def _layout() -> tuple[Edge, ...]:
    """Every arrow of the registry, in registry order: placed by its entry, by :data:`LAYOUT`,
    or by :func:`route` (after every placed one, clear of their labels and lines)."""
    placed: dict[int, Edge] = {}
    todo: list[tuple[int, str, transitions.Edge]] = []
    for i, (name, edge) in enumerate(transitions.EDGES):
        names = tuple(dict.fromkeys((name, *transitions.get(name).handles)))
        if edge.path is not None and edge.label_at is not None:
            where = (edge.path, edge.label_at)
        elif (edge.source, edge.target) in LAYOUT and not any(
                (e.source, e.target) == (edge.source, edge.target) for e in placed.values()):
            where = LAYOUT[(edge.source, edge.target)]
        else:
            todo.append((i, name, edge))
            continue
        placed[i] = Edge(edge.label, names, edge.source, edge.target, *where)
    for i, name, edge in todo:
        taken = (NOTE_BOX, *(label_box(e.label, e.label_at) for e in placed.values()))
        lines = tuple(p for e in placed.values() for p in _line_points(e.path))
        names = tuple(dict.fromkeys((name, *transitions.get(name).handles)))
        where = route(edge.source, edge.target, edge.label, taken, lines)
        placed[i] = Edge(edge.label, names, edge.source, edge.target, *where)
    return tuple(placed[i] for i in sorted(placed))


#: Every arrow the diagram draws, one per edge of the registry, in registry order.
EDGES: tuple[Edge, ...] = _layout()


def height() -> int:
    """How tall the drawing must be for every arrow and label (at least :data:`HEIGHT`)."""
    lowest = [label_box(e.label, e.label_at)[3] for e in EDGES]
    lowest += [p[1] for e in EDGES for p in _line_points(e.path)]
    return max(HEIGHT, round(max(lowest) + 8))


#: The drawing's height, in the SVG's units.
TALL = height()


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
        '<svg class="emq-diagram" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {TALL}" '
        'width="100%" '
        f'style="max-width:{WIDTH}px;font-family:sans-serif;font-size:{LABEL_SIZE}px">',
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
        f'<text x="{WIDTH - 4}" y="{cy + NODE_H + 4}" text-anchor="end" '
        f'style="fill:{style.SOFT};stroke:{style.PAGE};stroke-width:6px;paint-order:stroke">'
        f"{NOTE}</text></svg>"
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
