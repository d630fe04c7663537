"""The transitions registry (echomq_lab.transitions) against what it describes.

The registry is the one list of transitions; these tests hold it to the Lua files that ship,
the handles in ``jobs``, the fences the scripts really check (on every backend), the field
table, the panels and the diagram that are derived from it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest
import redis

import echomq_lab
from echomq_lab import branded, connect, errors, jobs, scripts, transitions
from echomq_lab.lessons import fields, stories
from echomq_lab.transitions import RETIRED, START
from echomq_lab.widgets import diagram, lab
from echomq_lab.widgets import transitions as transition_panel

Q = "registry"
LONG = 60_000
PACKAGE = Path(__file__).resolve().parent.parent / "echomq_lab"


def lua_files() -> set[str]:
    """The stems of the ``.lua`` files the scripts package ships."""
    folder = resources.files("echomq_lab.scripts")
    return {p.name.removesuffix(".lua") for p in folder.iterdir() if p.name.endswith(".lua")}


def test_every_shipped_script_is_a_transition_a_view_or_a_demonstration() -> None:
    assert set(transitions.SCRIPTS) | set(scripts.VIEWS) | set(scripts.DEMOS) == lua_files()
    assert not set(transitions.SCRIPTS) & set(scripts.VIEWS)
    assert not set(scripts.DEMOS) & (set(transitions.SCRIPTS) | set(scripts.VIEWS))
    assert scripts.names() == transitions.SCRIPTS + scripts.VIEWS + scripts.DEMOS
    assert len(set(transitions.NAMES)) == len(transitions.NAMES)
    assert len(set(transitions.SCRIPTS)) == len(transitions.SCRIPTS)
    for t in transitions.TRANSITIONS:
        assert scripts.load(t.script).name == t.script


def test_lookups_by_name_and_script() -> None:
    for t in transitions.TRANSITIONS:
        assert transitions.get(t.name) is t
        assert transitions.by_script(t.script) is t
    with pytest.raises(ValueError, match=r"unknown transition 'fly': pick one of enqueue, claim"):
        transitions.get("fly")
    with pytest.raises(ValueError, match="no transition runs the script 'snapshot'"):
        transitions.by_script("snapshot")


def _scripts_named(fn: Callable[..., object]) -> set[str]:
    """The scripts ``fn``'s own code loads by name, or names as one of the module's scripts."""
    found = set(re.findall(r'load\("(\w+)"\)', inspect.getsource(fn)))
    named = (getattr(jobs, name, None) for name in fn.__code__.co_names)
    return found | {s.name for s in named if isinstance(s, scripts.Script)}


def scripts_reached(fn: Callable[..., object]) -> set[str]:
    """The scripts a ``jobs`` function runs, directly or through one other ``jobs`` function."""
    found = _scripts_named(fn)
    for helper in fn.__code__.co_names:
        target = getattr(jobs, helper, None)
        if inspect.isfunction(target) and target is not fn:
            found |= _scripts_named(target)
    return found


def test_handles_are_exactly_the_jobs_functions_that_run_a_transition() -> None:
    public = {
        name: fn for name, fn in inspect.getmembers(jobs, inspect.isfunction)
        if fn.__module__ == jobs.__name__ and not name.startswith("_")
    }  # fmt: skip
    running = {name: scripts_reached(fn) for name, fn in public.items() if scripts_reached(fn)}
    registered = {h: t.script for t in transitions.TRANSITIONS for h in t.handles}
    registered |= {t.dropping: t.script for t in transitions.TRANSITIONS if t.dropping}
    assert set(running) == set(registered)
    for name, script in registered.items():
        assert running[name] == {script}, name
        assert public[name] is getattr(jobs, name)
    assert {"browse", "record", "check_lease"} <= set(public) - set(running)


def test_every_handle_reads_in_one_screen() -> None:
    # The pages print these functions as the course's code in Python: each fits one screen
    # and runs its script through the loader, with no hand-inlined EVALSHA or type escapes.
    names = {h for t in transitions.TRANSITIONS for h in (*t.handles, t.dropping) if h}
    for name in sorted(names):
        source = inspect.getsource(getattr(jobs, name))
        assert len(source.splitlines()) <= 25, f"{name} is {len(source.splitlines())} lines"
        for tuned in ("execute_command", "EVALSHA", "type: ignore", "__new__"):
            assert tuned not in source, f"{name} contains {tuned!r}"


def test_the_states_each_script_writes_are_the_registrys() -> None:
    for t in transitions.TRANSITIONS:
        if scripts.is_stub(t.script):  # nothing written yet to hold to its entry
            continue
        source = scripts.load(t.script).source
        written = set(re.findall(r"'state', '(\w+)'", source))
        deletes_row = "redis.call('DEL'" in source
        assert written == set(t.writes) - {RETIRED}, t.name
        assert deletes_row == (RETIRED in t.writes), t.name


def test_the_field_table_agrees_with_the_registry_on_state() -> None:
    table = {(w.script, w.value.decode()) for w in fields.FIELDS["state"].writes if w.value}
    registry = {(t.script, s) for t in transitions.TRANSITIONS for s in t.writes if s != RETIRED}
    assert table == registry
    assert fields.RETIRED_BY == tuple(t.script for t in transitions.TRANSITIONS if t.retires)
    assert all(transitions.by_script(s).retires for s in fields.RETIRED_BY)
    for entry in fields.FIELDS.values():
        for w in entry.writes:
            assert w.handles == transitions.by_script(w.script).handles


def test_edges_go_where_the_transition_writes() -> None:
    for t in transitions.TRANSITIONS:
        assert t.edges, t.name
        targets = {e.target for e in t.edges}
        if t.writes:
            assert targets == set(t.writes), t.name
        else:  # it leaves the state alone: its edge loops
            assert all(e.source == e.target for e in t.edges), t.name
    sources = {e.source for _, e in transitions.EDGES}
    assert START in sources and RETIRED not in sources


def test_fenced_means_the_script_checks_the_token() -> None:
    for t in transitions.TRANSITIONS:
        source = scripts.load(t.script).source
        checks = "fence(attempts)" in source and "EMQSTALE" in source
        assert checks == t.fenced, t.name
        for name in t.handles:
            handle = getattr(jobs, name)
            assert ("token" in inspect.signature(handle).parameters) == t.fenced, name
    assert transitions.FENCED == tuple(t.name for t in transitions.TRANSITIONS if t.fenced)


#: One call per fenced transition, presenting ``token`` for ``job`` in queue Q.
FENCED_CALLS: dict[str, Callable[[redis.Redis, str, int], object]] = {
    "complete": lambda c, job, token: jobs.complete(c, Q, job, token),
    "retry": lambda c, job, token: jobs.retry(c, Q, job, token, 0, 5, "e"),
    "extend": lambda c, job, token: jobs.extend(c, Q, job, token, LONG),
}


def test_each_fenced_transition_refuses_a_stale_token(conn: redis.Redis) -> None:
    assert set(FENCED_CALLS) == set(transitions.FENCED)
    for name in transitions.FENCED:
        job = branded.mint()
        jobs.enqueue(conn, Q, job, b"x")
        claimed = jobs.claim(conn, Q, LONG)
        assert claimed is not None and claimed.id == job
        row = jobs.record(conn, Q, job)
        with pytest.raises(errors.StaleToken, match=rf"^EMQSTALE: token {claimed.token + 1} is"):
            FENCED_CALLS[name](conn, job, claimed.token + 1)
        assert jobs.record(conn, Q, job) == row, name
        FENCED_CALLS[name](conn, job, claimed.token)  # the live token is accepted
        if name == "extend":
            jobs.complete(conn, Q, job, claimed.token)


def test_the_diagram_draws_every_registry_edge_once() -> None:
    wanted = [(e.source, e.target) for _, e in transitions.EDGES]
    assert len(set(wanted)) == len(wanted)  # the layout is keyed by the two states
    assert set(diagram.LAYOUT) <= set(wanted)  # no arrow placed for an edge no one has
    assert [(d.source, d.target, d.label) for d in diagram.EDGES] == [
        (e.source, e.target, e.label) for _, e in transitions.EDGES
    ]
    for (name, _), drawn in zip(transitions.EDGES, diagram.EDGES, strict=True):
        assert drawn.names[0] == name
        assert set(drawn.names) == {name, *transitions.get(name).handles}
        assert drawn.source in {*diagram.NODES, START} and drawn.target in diagram.NODES
        assert f'd="{drawn.path}"' in diagram.render_svg(None, None)


def test_an_edge_no_one_placed_is_laid_out_clear_of_the_other_nodes() -> None:
    """What the diagram does for a new transition's edge: a curve around every other node,
    its label clear of the labels already placed; an edge with no room is one line."""
    taken = tuple(diagram.label_box(e.label, e.label_at) for e in diagram.EDGES)
    path, at = diagram.route("pending", RETIRED, "withdraw", taken)
    numbers = [float(n) for n in re.findall(r"-?\d+", path)]
    ends = [(numbers[0], numbers[1]), (numbers[-2], numbers[-1])]
    assert diagram._inside(ends[0], diagram.node_box("pending", 12))  # it leaves pending's
    assert diagram._inside(ends[1], diagram.node_box(RETIRED, 12))  # edge, ends at retired's
    for state in ("active", "dead", "scheduled"):  # the straight way runs through active
        assert not diagram._inside(at, diagram.node_box(state, 4))
    assert not any(diagram._overlap(diagram.label_box("withdraw", at), box) for box in taken)
    with pytest.raises(ValueError, match="no room to draw pending -> dead"):
        diagram.route("pending", "dead", "x", taken=((0, 0, 740, 900),))


def test_the_panels_offer_the_registrys_transitions() -> None:
    panel = transition_panel.TransitionPanel(connect(fresh=True), Q)
    assert tuple(panel.picker.options) == transitions.NAMES
    assert tuple(panel.picker.tooltips) == tuple(t.label for t in transitions.TRANSITIONS)
    assert lab.HELD_ACTIONS == (*transitions.FENCED, "drop")


#: What each kind of argument is called in a handle's signature.
PARAMETER = {"job": "job_id", "payload": "payload", "token": "token", "lease": "lease_ms",
             "delay": "delay_ms", "max_attempts": "max_attempts", "error": "error"}


def test_each_demonstration_call_matches_its_handle() -> None:
    assert set(PARAMETER) == set(transitions.ARGUMENTS)
    for t in transitions.TRANSITIONS:
        assert t.call.handle in t.handles, t.name
        params = list(inspect.signature(getattr(jobs, t.call.handle)).parameters.values())
        required = [p.name for p in params[2:] if p.default is inspect.Parameter.empty]
        assert [p.name for p in params[:2]] == ["conn", "queue"], t.name
        assert required == [PARAMETER[k] for k in t.call.takes], t.name
        assert t.label and t.label == t.label.strip() and "\n" not in t.label, t.name
        assert t.starts == ("job" in t.call.takes and t.edges[0].source == START), t.name


def test_a_demonstration_call_names_what_is_missing() -> None:
    extend = transitions.get("extend")
    with pytest.raises(ValueError, match="^extend needs the token the job's last claim handed"):
        extend.arguments({"job": "JOB00000000001", "lease": 5})
    assert extend.arguments({"job": "J", "token": 2, "lease": 5, "delay": 9}) == ("J", 2, 5)
    with pytest.raises(ValueError, match="takes 'colour': pick from job, payload"):
        transitions.Call("paint", ("job", "colour"))
    assert transitions.get("promote").reads(3) == "3 moved"
    assert transitions.get("claim").reads(None) == "nothing"
    assert transitions.by_handle("enqueue_at") is transitions.get("schedule")
    assert transitions.by_handle("reap_dropping") is transitions.get("reap")
    with pytest.raises(ValueError, match="no transition has the handle 'browse'"):
        transitions.by_handle("browse")


def test_every_transition_runs_from_its_entry_with_no_default(conn: redis.Redis) -> None:
    """The stories' runner calls what the entry names: a transition its code never spells out
    runs as registered, and an unknown name is refused before anything is sent."""
    for t in transitions.TRANSITIONS:
        name = t.name
        runner = stories.Transitions(conn, f"{Q}-{name}", delay_ms=0, max_attempts=1)
        # The job is brought where the entry's first edge starts, along the registry's way
        # (a dead one by a retry at the cap of 1).
        for step in transitions.path(START, t.edges[0].source):
            runner.run(step)
        taken = runner.run(name)
        assert taken.name == name and taken.message.startswith(name), taken
        assert echomq_lab.check(conn, f"{Q}-{name}") == []
    with pytest.raises(ValueError, match="unknown transition 'fly'"):
        runner.run("fly")


def test_transition_names_are_listed_in_the_registry_only() -> None:
    """No other module of the package spells three or more transition names in one literal."""
    names = set(transitions.NAMES)
    group = re.compile(r"[(\[{]([^()\[\]{}]*)[)\]}]")
    # checks.Step is the words a question's story may use ("claim briefly", "retry stale"...):
    # a grammar for questions.toml, checked at load, not a second registry of transitions.
    vocabulary = re.compile(r"^Step = Literal\[.*?\]$", re.M | re.S)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "transitions.py" and path.parent == PACKAGE:
            continue
        text = path.read_text(encoding="utf-8")
        if path.name == "checks.py":
            assert vocabulary.search(text), "checks.Step moved: update this exemption"
            text = vocabulary.sub("", text)
        for m in group.finditer(text):
            quoted = set(re.findall(r"""["'](\w+)["']""", m.group(1)))
            assert len(quoted & names) < 3, f"{path.relative_to(PACKAGE)}: {m.group(0)[:80]}"
