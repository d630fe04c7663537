"""Store a page executed so that storing it again, unchanged, changes nothing (make notebooks).

    python tools/store.py notebooks/03-the-payload.ipynb ...        run and store each page
    python tools/store.py --check notebooks/03-the-payload.ipynb    run each; store nothing;
                                                                    exit 1 naming every page
                                                                    whose stored outputs differ

A fresh run differs from the last in two ways that say nothing about the page: ipywidgets names
every widget model at random, and what truly varies from run to run (ids, times, ports: the
rules of ``notebooks/sanitize.cfg``, the same rules nbval compares with) comes out anew. So the
store settles each run against the file it replaces:

1. every widget model is named by where it sits (the cell's id, the output, the path from that
   output through the model's children, layout and style): the same widget gets the same name
   on every run, and a new widget changes only its own names;
2. an output, or a widget model's state, that equals the stored one once both are sanitized by
   those rules keeps its stored text, byte for byte; what differs is stored as it ran, with the
   ids and times the kept outputs show put back where the fresh run repeats them (the page reads
   as one run).

Storing an unchanged page writes the bytes it read; a page's diff is what it shows differently.
``--check`` runs the same store into memory: a page whose result differs from its file is stale
(something it prints or draws changed), and the message says which lines and the one command that
stores it again. Needs the lab's install (nbclient, nbformat), nothing of the tests.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SANITIZE = Path("notebooks") / "sanitize.cfg"
VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"
REF = "IPY_MODEL_"
#: How many lines of a stale page's diff ``--check`` prints.
DIFF_LINES = 40

Rules = list[tuple[re.Pattern[str], str]]


def rules(root: Path = ROOT) -> Rules:
    """The sanitize rules, read as nbval reads them (``regex:`` then ``replace:`` lines)."""
    text = (root / SANITIZE).read_text(encoding="utf-8")
    pairs = re.findall("^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)
    return [(re.compile(regex), replace) for regex, replace in pairs]


def sanitized(value: Any, found: Rules) -> Any:
    """``value`` (JSON data) with every string sanitized by the rules, in their order."""
    if isinstance(value, str):
        for regex, replace in found:
            value = regex.sub(replace, value)
        return value
    if isinstance(value, dict):
        return {k: sanitized(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitized(v, found) for v in value]
    return value


# -- 1. widget models named by their place -----------------------------------------------------

def _state(nb: Any) -> dict[str, Any]:
    """The notebook's stored widget models, {model id: model} ({} when it stores none)."""
    widgets = nb.get("metadata", {}).get("widgets", {}).get(STATE, {})
    state: dict[str, Any] = widgets.get("state", {})
    return state


def _refs(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(model id, path) of every model ``value`` refers to, in a fixed order."""
    if isinstance(value, str):
        if value.startswith(REF):
            yield value[len(REF):], path
    elif isinstance(value, dict):
        view = value.get("data", {}).get(VIEW) if isinstance(value.get("data"), dict) else None
        if isinstance(view, dict) and isinstance(view.get("model_id"), str):
            yield view["model_id"], path
        for key in sorted(value):
            yield from _refs(value[key], f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _refs(item, f"{path}/{i}")


def _masked(value: Any) -> Any:
    """``value`` with the names of the models it refers to blanked (to order unplaced models)."""
    if isinstance(value, str):
        return REF if value.startswith(REF) else value
    if isinstance(value, dict):
        return {k: ("" if k == "model_id" else _masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def model_names(nb: Any, page: str) -> dict[str, str]:
    """{the run's model id: its name by place}, for every model the notebook stores or shows.

    A model shown by an output is placed by the cell's id and the output's index; a model that
    one refers to, by that path and the attribute; a model nothing reaches (made, not shown), by
    its content among the others nothing reaches."""
    import json

    state = _state(nb)
    names: dict[str, str] = {}

    def place(model: str, path: str) -> None:
        todo = [(model, path)]
        while todo:
            model, path = todo.pop()
            if model in names:
                continue
            names[model] = hashlib.sha1(f"{page}:{path}".encode()).hexdigest()[:32]
            if model in state:
                todo.extend(reversed(list(_refs(state[model].get("state", {}), path))))

    for cell in nb.get("cells", []):
        for i, output in enumerate(cell.get("outputs", [])):
            for model, path in _refs(output, f"{cell.get('id')}/{i}"):
                place(model, path)
    loose = sorted((m for m in state if m not in names),
                   key=lambda m: json.dumps(_masked(state[m]), sort_keys=True))
    for n, model in enumerate(loose):
        place(model, f"unshown/{n}")
    return names


def renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every model id of ``names`` (references, views, state keys) renamed."""
    if isinstance(value, str):
        if value.startswith(REF) and value[len(REF):] in names:
            return REF + names[value[len(REF):]]
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "model_id" and isinstance(item, str):
                out[key] = names.get(item, item)
            else:
                out[names.get(key, key)] = renamed(item, names)
        return out
    if isinstance(value, list):
        return [renamed(v, names) for v in value]
    return value


# -- 2. what did not change keeps its stored text ---------------------------------------------

def _tokens(text: str, found: Rules) -> list[str]:
    """Every piece of ``text`` a rule would replace, in order (rule by rule)."""
    return [m.group(0) for regex, _ in found for m in regex.finditer(text)]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from _strings(value[key])
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _mapped(value: Any, swap: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return swap(value)
    if isinstance(value, dict):
        return {k: _mapped(v, swap) for k, v in value.items()}
    if isinstance(value, list):
        return [_mapped(v, swap) for v in value]
    return value


def coalesced(outputs: list[Any]) -> list[Any]:
    """``outputs`` with each run of stream outputs of one name joined into one, as nbval joins
    them before comparing: how a run's prints split into messages is the threads' timing."""
    joined: list[Any] = []
    for output in outputs:
        last = joined[-1] if joined else None
        if output.get("output_type") == "stream" and last is not None \
                and last.get("output_type") == "stream" and last.get("name") == output.get("name"):
            joined[-1] = {**last, "text": last["text"] + output["text"]}
        else:
            joined.append(output)
    return joined


def _joined(nb: Any) -> Any:
    """``nb`` with every code cell's prints joined (:func:`coalesced`), before its models are
    named by their output's place: a print split in two must not move a panel's name."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = coalesced(cell.get("outputs", []))
    return nb


def settled(new: Any, old: Any | None, found: Rules) -> Any:
    """``new`` (a fresh run, models already named by place) settled against ``old`` (the file
    it replaces, read the same way; None for a new page)."""
    for nb in (new, old) if old is not None else (new,):
        _joined(nb)
    if old is None:
        return new
    pairs: list[tuple[Any, Any]] = []  # (kept stored text, the fresh text it stands for)
    changed: list[tuple[Any, str | int]] = []  # (container, key) of what is stored fresh
    before = {c.get("id"): c for c in old.get("cells", []) if c.get("cell_type") == "code"}
    for cell in new.get("cells", []):
        prev = before.get(cell.get("id"))
        if cell.get("cell_type") != "code":
            continue
        if prev is not None and prev.get("execution_count") == cell.get("execution_count") \
                and sanitized(prev.get("outputs"), found) == sanitized(cell.get("outputs"), found):
            pairs.append((prev["outputs"], cell["outputs"]))
            cell["outputs"] = prev["outputs"]
        else:
            changed.append((cell, "outputs"))
    old_state, new_state = _state(old), _state(new)
    for model, value in new_state.items():
        prev = old_state.get(model)
        if prev is not None and sanitized(prev, found) == sanitized(value, found):
            pairs.append((prev, value))
            new_state[model] = prev
        else:
            changed.append((new_state, model))
    # The ids and times the kept text shows, put back where the fresh text repeats them.
    back: dict[str, str] = {}
    clash: set[str] = set()
    for kept, fresh in pairs:
        for a, b in zip(_strings(kept), _strings(fresh), strict=False):
            for was, now in zip(_tokens(a, found), _tokens(b, found), strict=False):
                if back.setdefault(now, was) != was:
                    clash.add(now)
    back = {k: v for k, v in back.items() if k not in clash and k != v}
    if back:
        pattern = re.compile("|".join(re.escape(k) for k in sorted(back, key=len, reverse=True)))

        def swap(text: str) -> str:
            return pattern.sub(lambda m: back[m.group(0)], text)

        for container, key in changed:
            container[key] = _mapped(container[key], swap)
    return new


# -- running a page ---------------------------------------------------------------------------

def page_of(path: Path) -> str:
    """The page's slug from its file name (``03-the-payload.ipynb`` -> ``the-payload``)."""
    return re.sub(r"^\d\d-", "", path.stem)


def run(path: Path) -> Any:
    """The notebook at ``path``, executed top to bottom as ``make notebooks`` always has (the
    embedded server, widget state stored, no timings), in the notebook's folder."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    os.environ.pop("ECHOMQ_REDIS_URL", None)
    NotebookClient(nb, resources={"metadata": {"path": str(path.parent)}},
                   store_widget_state=True, record_timing=False).execute()
    return nb


def text(nb: Any) -> str:
    """The notebook as nbformat writes it (what ``jupyter nbconvert --inplace`` stored)."""
    import nbformat

    return str(nbformat.writes(nb)) + "\n"


def stored(path: Path, found: Rules, ran: Any | None = None) -> str:
    """What storing ``path`` writes: a fresh run (or ``ran``) settled against the file."""
    import nbformat

    fresh = _joined(run(path) if ran is None else ran)
    fresh = renamed(fresh, model_names(fresh, page_of(path)))
    old = None
    if path.is_file():
        read = _joined(nbformat.read(path, as_version=4))
        old = renamed(read, model_names(read, page_of(path)))
    return text(nbformat.from_dict(settled(fresh, old, found)))  # type: ignore[no-untyped-call]


def stale(path: Path, fresh: str, root: Path = ROOT) -> str:
    """'' when ``fresh`` is the stored file; else what differs, stored -> fresh, and the
    command that stores the page again."""
    now = path.read_text(encoding="utf-8")
    if now == fresh:
        return ""
    name = path.resolve().relative_to(root).as_posix() if path.resolve().is_relative_to(root) \
        else str(path)
    lines = list(difflib.unified_diff(now.splitlines(), fresh.splitlines(),
                                      f"{name} (stored)", f"{name} (a fresh run)", n=2,
                                      lineterm=""))
    more = len(lines) - DIFF_LINES
    shown = lines[:DIFF_LINES] + ([f"  … {more} more lines"] if more > 0 else [])
    return (f"{name}: the page shows something else than it stores ('-' stored, '+' a fresh "
            "run):\n" + "\n".join(shown) + "\n"
            f"store it again: make notebooks PAGE={page_of(path)}")


def one(path: Path, check: bool, root: Path) -> tuple[bool, str]:
    """Store (or check) the page at ``path``: (went well, what to print)."""
    started = time.monotonic()
    try:
        fresh = stored(path, rules(root))
    except Exception as exc:  # a cell failed: say which page and why, go on with the others
        lines = str(exc).strip().splitlines()
        return False, (f"{path.name} did not run: {type(exc).__name__}: "
                       f"{lines[-1] if lines else ''}\nrun it with `make lab` to see the cell")
    took = f"{time.monotonic() - started:.0f} s"
    if check:
        said = stale(path, fresh, root)
        return (False, said) if said else (True, f"{path.name}: as stored ({took})")
    if fresh != path.read_text(encoding="utf-8"):
        path.write_text(fresh, encoding="utf-8")
        return True, f"{path.name}: stored, changed ({took})"
    return True, f"{path.name}: stored, unchanged ({took})"


def main(argv: list[str] | None = None) -> int:
    """Store (or with --check, compare) each notebook; 0 when all went well, 1 when a page
    failed to run or (--check) is stale."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="store nothing; exit 1 naming every page that is stale")
    parser.add_argument("--jobs", type=int, default=1, help="pages run at once (default 1)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: ours)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    paths = [p if p.is_absolute() else Path.cwd() / p for p in args.notebooks]
    os.environ.pop("ECHOMQ_REDIS_URL", None)
    bad: list[Path] = []
    if args.jobs > 1 and len(paths) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(min(args.jobs, len(paths)), mp_context=context) as pool:
            futures = {pool.submit(one, p, args.check, root): p for p in paths}
            results = ((futures[f], f.result()) for f in as_completed(futures))
            for path, (ok, said) in results:
                print(said, file=sys.stdout if ok else sys.stderr, flush=True)
                bad += [] if ok else [path]
    else:
        for path in paths:
            ok, said = one(path, args.check, root)
            print(said, file=sys.stdout if ok else sys.stderr, flush=True)
            bad += [] if ok else [path]
    if bad:
        slugs = " ".join(page_of(p) for p in sorted(bad))
        page = slugs if len(bad) == 1 else f'"{slugs}"'
        what = "stale or failing" if args.check else "failing"
        print(f"{len(bad)} page(s) {what}: {slugs}\n"
              f"store {'it' if len(bad) == 1 else 'them'} again: make notebooks PAGE={page}",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
