"""Start a new course page: a notebook with the course's spine, placed in the reading order.

    python tools/page.py --name the-lease --title "The lease" [--after the-payload]
                         [--summary "..."]

puts the page ``the-lease`` in ``tools/pages.toml`` after the page ``the-payload`` (without
``--after``: last), renames the notebooks after it to their new numbers (``git mv`` in a git
checkout), relinks every notebook, README.md and docs/*.md to the new file names, writes
``notebooks/NN-the-lease.ipynb`` with the course's spine and two starter self-checks in
``echomq_lab/lessons/questions.toml``, and prints the notebook's path. A name beginning
``lab-`` makes a lab. ``make page`` runs this, then ``tools/nav.py`` (every navigation cell and
README's table) and stores the new notebook executed. A refused name, title or place writes
nothing and says why in one line.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from course import (
    KERNEL,
    NOTEBOOKS,
    PAGES,
    README,
    ROOT,
    SLUG,
    CourseError,
    Page,
    dump_notebook,
    entry_toml,
    file_name,
    find,
    load,
    problems,
    read_notebook,
)

SUMMARY = "(one line: what the reader comes away with)"
#: How every placeholder of the spine begins: an italic parenthesis, "*(what to write here)*".
#: No written page holds one; ``make check`` fails on each left (:func:`placeholders`).
PLACEHOLDER = "*("
QUESTIONS = Path("echomq_lab") / "lessons" / "questions.toml"
#: The two starter self-checks of a new page (``{key}``: the page's slug as a name). Both are
#: real, graded by the server; the author writes over them.
STARTERS = """\
{heading}

[[checks]]
key = "{key}_claimed_state"
page = "{slug}"
observer = "story"
params = {{ steps = ["claim"], ask = "state" }}
question = "A waiting job is claimed once. What is its state afterwards?"
answers = [
    {{ when = "pending", text = "pending" }},
    {{ when = "active", text = "active" }},
    {{ when = "done", text = "done" }},
]
hint = "A worker now holds the job. What do the other workers need to see?"
lesson = "Claim hands the job to one worker and marks it active until a transition moves it."

[[checks]]
key = "{key}_claimed_attempts"
page = "{slug}"
observer = "story"
params = {{ steps = ["claim"], ask = "attempts" }}
question = "A new job is claimed once. What does its attempts field hold then?"
answers = [
    {{ when = "0", text = "0" }},
    {{ when = "1", text = "1" }},
    {{ when = "2", text = "2" }},
]
hint = "Enqueue starts the count; each claim adds to it."
lesson = "Each claim adds one to attempts, and the new count is the worker's token."
"""


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def _code(text: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text.strip("\n")}


def spine(title: str, summary: str, queue: str, hub: Page,
          keys: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The cells of a new page, in the course's order, with placeholders to write over; one
    cell shows each self-check of ``keys`` (entries of ``questions.toml``)."""
    return [
        _markdown(f"""
# {title}

*{summary}*

Part of **EchoMQ, in depth** → *The Protocol* → *{hub.title}*. *(Two or three sentences: where
this page sits, and what it adds to the one before.)*
"""),
        _markdown("""
## What you will learn

- *(the fact of this page, in one line)*;
- *(what you will try, and what the server will answer)*;
- *(what you can check for yourself afterwards)*.
"""),
        _markdown(f"""
## Setup

`connect()` gives a client on the embedded server, or on the real Valkey or Redis named by
`ECHOMQ_REDIS_URL`. This notebook works in its own queue, `{queue}`, and empties it first, so
running it again starts from the same place.
"""),
        _code(f"""
from echomq_lab import branded, connect, jobs
from echomq_lab.queues import reset
from echomq_lab.widgets import RecordView, SelfCheck
from echomq_lab.widgets.beats import two_beats

conn = connect()
QUEUE = "{queue}"
emptied = reset(conn, QUEUE)
"""),
        _markdown("""
## The fact

*(State it in two or three sentences: what the server holds, and which transition changes it.)*
"""),
        _markdown("""
## Try it

*(Ask for a prediction first — what will the row hold after the next step? — then let the
reader act and the server answer.)*
"""),
        _code("""
job_id = branded.mint("JOB")
jobs.enqueue(conn, QUEUE, job_id, b"hello")
view = RecordView(conn, QUEUE, job_id)
view
"""),
        _markdown("""
## The worked example, in two beats

Beat one is the named handle the host calls; beat two is the Lua script it sends with
`EVALSHA`. *(Point at the lines that matter here.)*
"""),
        _code("""
two_beats(jobs.enqueue, "enqueue")
"""),
        _markdown("""
## The pattern

*Redis Patterns Applied* — **Data Modeling & Memory**. *(How this page applies it.)*
"""),
        _markdown("""
## Check yourself

*(One sentence that sets the questions up; nothing above may give their answers. Each question
is an entry of `echomq_lab/lessons/questions.toml` shown by its key, here or beside the section
it checks; the server grades every answer.)*
"""),
        *(_code(f'SelfCheck(conn, "{key}")') for key in keys),
        _markdown("""
## Recap

- *(one line for each thing learned)*
"""),
        _markdown("""
## Questions to try

**1.** *(A question answered by changing a cell above and running it again.)*

<details><summary>Show the answer</summary>

*(The answer, and the cell that shows it.)*

</details>
"""),
        _markdown("""
## References

- [Valkey — Programmability](https://valkey.io/topics/programmability/): *(why it matters
  here.)*
"""),
    ]


def notebook(cells: list[dict[str, Any]], stem: str) -> dict[str, Any]:
    """An nbformat 4.5 notebook of ``cells`` with a Python 3 kernel; cell ids from ``stem``."""
    for i, cell in enumerate(cells):
        cell["id"] = f"{stem[:40]}-{i:02d}"
        cell["source"] = cell["source"].splitlines(keepends=True)
    metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def _place(pages: list[Page], after: str) -> int:
    """The new page's place in the list: just after the page ``after`` ('' : last)."""
    if not after:
        return len(pages)
    return find(pages, after.strip()).number + 1


def _renamed(pages: list[Page], place: int) -> dict[str, str]:
    """{old file: new file} for the pages that move one place down to make room."""
    return {p.file: file_name(p.number + 1, p.slug) for p in pages[place:]}


def _with_page(text: str, entry: str, place: int) -> str:
    """``pages.toml`` text with ``entry`` (a ``[[page]]`` block) as its ``place``-th entry."""
    starts = [m.start() for m in re.finditer(r"^\[\[page\]\]$", text, re.MULTILINE)]
    if place >= len(starts):
        return text.rstrip("\n") + "\n" + entry
    return text[: starts[place]] + entry.lstrip("\n") + "\n" + text[starts[place]:]


def _with_starters(text: str, starters: str, later: set[str]) -> str:
    """``questions.toml`` text with ``starters`` before the checks of the pages in ``later``."""
    pages = [c.get("page") for c in tomllib.loads(text).get("checks", [])]
    starts = [m.start() for m in re.finditer(r"^\[\[checks\]\]$", text, re.MULTILINE)]
    first = next((i for i, page in enumerate(pages) if page in later), None)
    if first is None:
        return text.rstrip("\n") + "\n\n" + starters
    at = cursor = starts[first]
    while cursor > 0:  # the later page's section heading ("# -- slug ---") stays above its entry
        line = text.rfind("\n", 0, cursor - 1) + 1
        content = text[line:cursor].strip()
        if content and not content.startswith("#"):
            break
        cursor = line
        if content.startswith("# -- "):
            at = cursor
            break
    return text[:at] + starters + "\n" + text[at:]


def _relinked(text: str, renamed: dict[str, str]) -> str:
    """``text`` with every old file name of ``renamed`` replaced by its new one, at once."""
    if not renamed:
        return text
    old = re.compile("|".join(re.escape(name) for name in renamed))
    return old.sub(lambda m: renamed[m.group(0)], text)


def _move(root: Path, old: Path, new: Path) -> None:
    """Rename ``old`` to ``new``: ``git mv`` when git tracks it, else a plain rename."""
    tracked = subprocess.run(["git", "-C", str(root), "ls-files", "--error-unmatch", str(old)],
                             capture_output=True).returncode == 0
    if tracked:
        subprocess.run(["git", "-C", str(root), "mv", str(old), str(new)], check=True,
                       capture_output=True)
    else:
        old.rename(new)


def create(root: Path, name: str, title: str, summary: str = "", after: str = "") -> Path:
    """Place the new page after ``after`` ('' : last) and write it; return its notebook's path.

    CourseError, with nothing written, for a malformed name or title, a name already taken,
    an ``after`` that names no page, or a list that disagrees with ``notebooks/``.
    """
    slug = name.strip()
    if re.fullmatch(r"\d\d-.*", slug):
        raise CourseError(f"NAME={name!r}: give the name without a number (the place in the "
                          "list makes the number); AFTER=<name> puts it after another page")
    if not SLUG.fullmatch(slug) or len(slug) > 60:
        raise CourseError(f"NAME={name!r}: use lowercase words joined by '-', e.g. the-ttl")
    title, summary = title.strip(), (summary.strip() or SUMMARY)
    if not title or "\n" in title or "\n" in summary:
        raise CourseError("TITLE must be one non-empty line (and SUMMARY one line)")
    pages = load(root)
    if not pages:
        raise CourseError(f"{PAGES} lists no hub page to link the new page to")
    found = problems(pages, root)
    if found:
        raise CourseError(f"{PAGES} and {NOTEBOOKS}/ disagree ({found[0].splitlines()[0]}); "
                          "mend that first")
    if slug in {p.slug for p in pages}:
        raise CourseError(f"NAME={slug!r}: a page of that name is already in {PAGES}")
    place = _place(pages, after)
    if len(pages) >= 100:
        raise CourseError(f"{PAGES} holds 100 pages; two-digit numbers stop at 99")
    key = slug.replace("-", "_")
    questions = (root / QUESTIONS).read_text(encoding="utf-8")
    heading = f"# -- {slug} ".ljust(92, "-")
    starters = STARTERS.format(key=key, slug=slug, heading=heading)
    keys = tuple(re.findall(r'^key = "(\w+)"', starters, re.MULTILINE))
    taken = [k for k in keys if f'key = "{k}"' in questions]
    if taken:
        raise CourseError(f"{QUESTIONS} already has a check called {taken[0]}")
    renamed = _renamed(pages, place)
    file = file_name(place, slug)

    for old in reversed(renamed):  # the last first, so no name is ever taken twice
        _move(root, root / NOTEBOOKS / old, root / NOTEBOOKS / renamed[old])
    for path in sorted((root / NOTEBOOKS).glob("[0-9][0-9]-*.ipynb")):
        nb = read_notebook(path)
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"]) if isinstance(cell["source"], list) \
                    else cell["source"]
                if _relinked(text, renamed) != text:
                    cell["source"] = _relinked(text, renamed).splitlines(keepends=True)
        if dump_notebook(nb) != path.read_text(encoding="utf-8"):
            path.write_text(dump_notebook(nb), encoding="utf-8")
    for doc in [root / README, *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        if _relinked(text, renamed) != text:
            doc.write_text(_relinked(text, renamed), encoding="utf-8")

    toml = (root / PAGES).read_text(encoding="utf-8")
    (root / PAGES).write_text(_with_page(toml, entry_toml(slug, title, summary), place),
                              encoding="utf-8")
    later = {p.slug for p in pages[place:]}
    (root / QUESTIONS).write_text(_with_starters(questions, starters, later), encoding="utf-8")
    path = root / NOTEBOOKS / file
    cells = spine(title, summary, slug, pages[0], keys)
    path.write_text(dump_notebook(notebook(cells, path.stem)), encoding="utf-8")
    return path


def _lines_with(text: str, needle: str) -> list[int]:
    """The 1-based numbers of the lines of ``text`` that hold ``needle``."""
    return [n for n, line in enumerate(text.splitlines(), 1) if needle in line]


def placeholders(root: Path) -> list[str]:
    """Every placeholder ``make page`` wrote that is still there, one line each: the file and
    line, the cell, the text, and what to do ([] when none is left)."""
    found = []
    for path in sorted((root / NOTEBOOKS).glob("*.ipynb")):
        raw = path.read_text(encoding="utf-8")
        file_lines = raw.splitlines()
        name = f"{NOTEBOOKS.as_posix()}/{path.name}"
        cursor = 0
        for index, cell in enumerate(read_notebook(path)["cells"]):
            if cell["cell_type"] != "markdown":
                continue
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            for number, line in enumerate(src.splitlines(), 1):
                if PLACEHOLDER not in line:
                    continue
                quoted = json.dumps(line, ensure_ascii=False)[1:-1]
                at = next((n for n in range(cursor, len(file_lines))
                           if quoted in file_lines[n]), None)
                where = f"{name}:{at + 1}" if at is not None else name
                cursor = at + 1 if at is not None else cursor
                text = line.strip()
                found.append(f"{where}: cell {index}, line {number}: placeholder left: "
                             f"{text[:70]}{'…' if len(text) > 70 else ''} (write the page's "
                             "own words there)")
    pages_text = (root / PAGES).read_text(encoding="utf-8")
    for n in _lines_with(pages_text, SUMMARY):
        found.append(f"{PAGES.as_posix()}:{n}: the summary is still the placeholder {SUMMARY!r} "
                     "(one line: what the reader comes away with)")
    questions = (root / QUESTIONS).read_text(encoding="utf-8")
    for asked in re.findall(r'^question = "(.*)"$', STARTERS, re.MULTILINE):
        for n in _lines_with(questions, f'question = "{asked}"'):
            found.append(f"{QUESTIONS.as_posix()}:{n}: a starter question of make page is "
                         "still there: ask the page's own (docs/authoring.md, "
                         "\"Self-checks\")")
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the command line; print the new notebook's path (relative to the root). With
    ``--placeholders``: print every placeholder left and exit 1, or exit 0 when none is."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placeholders", action="store_true",
                        help="write nothing: list every placeholder left on the pages")
    parser.add_argument("--name", help="the page's name: lowercase-words")
    parser.add_argument("--title", help="the page's title (its first heading)")
    parser.add_argument("--summary", default="", help="one line for the tables of pages")
    parser.add_argument("--after", default="", help="the page it follows (default: the last)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: ours)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.placeholders:
        left = placeholders(root)
        for line in left:
            print(line, file=sys.stderr)
        if left:
            print(f"make check: {len(left)} placeholder(s) left; `make lab` to write over them",
                  file=sys.stderr)
        return 1 if left else 0
    if args.name is None or args.title is None:
        parser.error("--name and --title are required")
    try:
        pages = load(root)
        path = create(root, args.name, args.title, args.summary, args.after)
    except CourseError as exc:
        print(f"page: {exc}", file=sys.stderr)
        return 1
    moved = _renamed(pages, _place(pages, args.after))
    for old, new in moved.items():
        print(f"page: {NOTEBOOKS.as_posix()}/{old} is now {new}", file=sys.stderr)
    if moved:
        print("page: every link inside the repository follows; a link from outside to an old "
              "name (Binder, a bookmark, the site's ?path=) does not: docs/authoring.md, "
              "\"Renumbering\"", file=sys.stderr)
    print(path.relative_to(root).as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main())
