"""Start a new transition: its script, its handle and its entry, and a conformance test.

    python tools/transition.py --name cancel [--from "pending scheduled"] [--to completed]
                               [--takes job] [--label "withdraw a job still waiting"]

writes ``echomq_lab/scripts/<name>.lua`` (its header, and a body that refuses every call with
``<name> is not written yet``), the handle ``<name>`` in ``echomq_lab/jobs.py`` (it runs the
script with the row and the four sets as KEYS), the entry in ``echomq_lab/transitions.py``'s
registry (one edge from each ``--from`` state to each ``--to`` state; ``--to completed`` deletes
the row) and ``tests/test_transition_<name>.py``, which holds the script to its entry on every
backend. Everything else that knows transitions reads the registry: the panels offer the new
one at once, the state diagram draws its edges, and until the script is written its tests skip,
saying so. ``make transition`` runs this. A refused name or argument writes nothing and says why
in one line.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path("echomq_lab")
SCRIPTS = PACKAGE / "scripts"
JOBS = PACKAGE / "jobs.py"
REGISTRY = PACKAGE / "transitions.py"
TESTS = Path("tests")
NAME = re.compile(r"[a-z][a-z_]{0,39}")
#: Where a job can be: before it exists, each state of the row, and retired.
STATES = ("start", "pending", "active", "scheduled", "dead", "completed")
#: Each kind of argument a handle takes (transitions.ARGUMENTS): its parameter, its type, and
#: how the handle checks it before anything is sent.
PARAMETERS: dict[str, tuple[str, str, str]] = {
    "job": ("job_id", "str", "job_id"),
    "payload": ("payload", "Payload", "check_payload(payload)"),
    "token": ("token", "int", "check_token(token)"),
    "lease": ("lease_ms", "int", "check_lease(lease_ms)"),
    "delay": ("delay_ms", "int", 'check_int("delay_ms", delay_ms, 0, MAX_MS)'),
    "max_attempts": ("max_attempts", "int",
                     'check_int("max_attempts", max_attempts, 1, MAX_TOKEN)'),
    "error": ("error", "str | bytes", 'check_text("error", error)'),
}
#: The line before which the handle goes (the handles end where the readers begin).
HANDLES_END = "\n\ndef browse("
#: The line after the registry's last entry.
REGISTRY_END = "\n)\n\n#: The transition names"


class TransitionError(Exception):
    """A name or argument ``make transition`` refuses, in one line."""


def _known(root: Path) -> set[str]:
    """Every name a new transition may not take: scripts, transitions, and ``jobs``' names."""
    taken = {p.stem for p in (root / SCRIPTS).glob("*.lua")}
    taken |= set(re.findall(r'Transition\("(\w+)"', (root / REGISTRY).read_text()))
    taken |= set(re.findall(r"^(?:def |class )?(\w+)", (root / JOBS).read_text(), re.M))
    return taken


def lua(name: str, label: str, takes: tuple[str, ...]) -> str:
    """The script's header (its keys and arguments as the handle passes them) and its stub."""
    lines = [f"-- {name}: {label}."]
    keys = ["row       emq:{Q}:job:<ID>"] if "job" in takes else []
    keys += [f"{s:<9} emq:{{Q}}:{s}" for s in ("pending", "active", "schedule", "dead")]
    lines += [f"-- KEYS[{i}] {k}" for i, k in enumerate(keys, 1)]
    argv = [] if "job" in takes else ["prefix    the row-key prefix emq:{Q}:job:"]
    argv += [f"{PARAMETERS[k][0]:<9} (to describe)" if k != "job"
             else "id        the branded id" for k in takes]
    lines += [f"-- ARGV[{i}] {a}" for i, a in enumerate(argv, 1)]
    lines += ["-- Reply: (to describe: what each outcome answers)",
              "-- Not written yet: the line below refuses every call. Replace it with the body,",
              "-- and the header with what the body takes and answers (docs/protocol.md).",
              f"return redis.error_reply('EMQTODO {name} is not written yet')", ""]
    return "\n".join(lines)


def handle(name: str, label: str, takes: tuple[str, ...]) -> str:
    """The handle: its arguments checked, the keys built, the script run once."""
    params = "".join(f", {PARAMETERS[k][0]}: {PARAMETERS[k][1]}" for k in takes)
    args = ([] if "job" in takes else ["k.rows"]) + [PARAMETERS[k][2] for k in takes]
    keys = "[k.row(job_id), *k.sets]" if "job" in takes else "[*k.sets]"
    passed = ", ".join(args)
    described = "the row, then pending, active, schedule, dead" if "job" in takes else \
        "pending, active, schedule, dead"
    return (
        f"\n\ndef {name}(conn: redis.Redis, queue: str{params}) -> object:\n"
        f'    """{label[:1].upper()}{label[1:]}.\n\n'
        f"    (To write: what it answers and what it refuses; until {name}.lua is written, its\n"
        f"    stub refuses every call: :class:`errors.NotWritten`.)\n"
        f'    """\n'
        f"    k = keyspace.keys(queue)\n"
        f"    # KEYS: {described}. ARGV: {passed}.\n"
        f'    return load("{name}")(conn, {keys}, [{passed}])\n'
    )


def entry(name: str, sources: tuple[str, ...], targets: tuple[str, ...],
          takes: tuple[str, ...], label: str) -> str:
    """The registry entry: one edge from each source to each target."""
    states = {"start": "START", "completed": "RETIRED"}

    def state(s: str) -> str:
        return states.get(s, json.dumps(s))

    edges = "\n                ".join(f"Edge({state(s)}, {state(t)}, {json.dumps(name)}),"
                                      for s in sources for t in targets)
    writes = "".join(f"{state(t)}, " for t in targets if t not in sources)
    takes_text = "".join(f"{json.dumps(k)}, " for k in takes)
    return (
        f'\n    Transition("{name}", "{name}", ("{name}",), ({writes.strip()}),\n'
        f"               ({edges}), fenced={'token' in takes},\n"
        f'               call=Call("{name}", ({takes_text.strip()})),\n'
        f"               label={json.dumps(label)}),"
    )


def conformance(name: str) -> str:
    """A test of the script against its entry, on every backend."""
    return f'''"""{name} against its registry entry, on every backend (``make transition`` wrote
this).

From each state an edge of its entry leaves, a job must land where that edge points: its row
and the one set that holds it agree (retired: nothing of it is left). Add what else the
protocol promises of {name} (its replies, its refusals: docs/protocol.md). Until {name}.lua is
written its stub refuses every call, and these tests skip, saying so.
"""

from __future__ import annotations

import pytest
import redis

from echomq_lab import jobs, keyspace, measure, transitions
from echomq_lab.drift import SET_OF_STATE

Q = "t-{name}"
T = transitions.get("{name}")


@pytest.mark.parametrize("edge", T.edges, ids=[f"{{e.source}}-{{e.target}}" for e in T.edges])
def test_{name}_goes_where_its_edges_point(conn: redis.Redis, edge: transitions.Edge) -> None:
    values = measure.bring(conn, Q, T, edge.source)
    job = str(values["job"])
    getattr(jobs, T.call.handle)(conn, Q, *T.arguments(values))
    row = jobs.record(conn, Q, job)
    holders = [s for s in keyspace.SET_NAMES
               if conn.zscore(keyspace.queue_key(Q, s), job) is not None]
    if edge.target == transitions.RETIRED:
        assert row is None and holders == []
    else:
        assert row is not None and row[b"state"] == edge.target.encode()
        assert holders == [SET_OF_STATE[edge.target]]
'''


def create(root: Path, name: str, sources: tuple[str, ...], targets: tuple[str, ...],
           takes: tuple[str, ...], label: str) -> list[Path]:
    """Write the four files (three new, two edited); TransitionError, nothing written, when a
    name or argument is refused."""
    if not NAME.fullmatch(name) or keyword.iskeyword(name):
        raise TransitionError(f"NAME={name!r}: use lowercase letters and '_', e.g. cancel")
    if name in _known(root):
        raise TransitionError(f"NAME={name!r}: a transition, script or jobs name of that name "
                              "exists already")
    for state in (*sources, *targets):
        if state not in STATES:
            raise TransitionError(f"{state!r} is no state: pick from {', '.join(STATES)}")
    if not sources or not targets or "start" in targets or "completed" in sources:
        raise TransitionError("FROM needs a state a job can leave and TO one it can reach "
                              "(start comes before a job, completed after it)")
    for kind in takes:
        if kind not in PARAMETERS:
            raise TransitionError(f"TAKES={kind!r}: pick from {', '.join(PARAMETERS)}")
    if not label.strip() or "\n" in label:
        raise TransitionError("LABEL must be one non-empty line")
    jobs_text, registry_text = (root / JOBS).read_text(), (root / REGISTRY).read_text()
    if HANDLES_END not in jobs_text or REGISTRY_END not in registry_text:
        raise TransitionError(f"{JOBS} or {REGISTRY} is not laid out as this tool expects")
    written = {
        root / SCRIPTS / f"{name}.lua": lua(name, label, takes),
        root / JOBS: jobs_text.replace(HANDLES_END, handle(name, label, takes) + HANDLES_END, 1),
        root / REGISTRY: registry_text.replace(
            REGISTRY_END, entry(name, sources, targets, takes, label) + REGISTRY_END, 1),
        root / TESTS / f"test_transition_{name}.py": conformance(name),
    }
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return list(written)


def main(argv: list[str] | None = None) -> int:
    """The command line: writes the files and names them, or one line on stderr and 2."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the transition's name: lower_case")
    parser.add_argument("--from", dest="sources", default="pending",
                        help="the states it leaves, space-separated (default: pending)")
    parser.add_argument("--to", dest="targets", default="completed",
                        help="the states it reaches (default: completed: the row is deleted)")
    parser.add_argument("--takes", default="job",
                        help="what its handle takes after the queue (default: job)")
    parser.add_argument("--label", default="", help="what it does in a few words")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: ours)")
    args = parser.parse_args(argv)
    words = [tuple(re.split(r"[\s,]+", v.strip())) if v.strip() else ()
             for v in (args.sources, args.targets, args.takes)]
    label = args.label or f"{args.name}, not written yet"
    try:
        paths = create(args.root, args.name, words[0], words[1], words[2], label)
    except TransitionError as exc:
        print(f"make transition: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path.relative_to(args.root))
    print(f"Next: write {SCRIPTS}/{args.name}.lua and the handle jobs.{args.name}; then "
          f"make notebooks and make check (docs/authoring.md, 'Adding a transition').")
    return 0


if __name__ == "__main__":
    sys.exit(main())
