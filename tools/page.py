"""Start a new course page: a notebook with the course's spine, added to the reading order.

    python tools/page.py --name the-ttl --title "The TTL" [--summary "..."]

writes ``notebooks/NN-the-ttl.ipynb`` (NN: one past the last page; or give ``--name
07-the-ttl``), appends its entry to ``tools/pages.toml`` and prints the notebook's path. A
name beginning ``lab-`` makes a lab. ``make page`` runs this, then ``tools/nav.py`` (every
navigation cell) and stores the new notebook executed. Nothing is written if the name, the
title or the number is refused.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from course import NOTEBOOKS, PAGES, ROOT, CourseError, Page, dump_notebook, entry_toml, load

NAME = re.compile(r"(?:(?P<number>\d\d)-)?(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)")
SUMMARY = "(one line: what the reader comes away with)"


def _markdown(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text.strip("\n")}


def _code(text: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text.strip("\n")}


def spine(title: str, summary: str, queue: str, hub: Page, number: int = 0) -> list[dict[str, Any]]:
    """The cells of a new page (page ``number``), in the course's order, with placeholders to
    write over. Its self-checks are the ``questions.toml`` entries that name its file."""
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
from IPython.display import display

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

*(One sentence that sets the question up; nothing above may give its answer. The questions are
this page's entries in `echomq_lab/lessons/questions.toml`; the server grades every answer.)*
"""),
        _code(f"""
for check in SelfCheck.page(conn, {number}):
    display(check)
"""),
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
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return {"cells": cells, "metadata": {"kernelspec": kernel, "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def create(root: Path, name: str, title: str, summary: str = "") -> Path:
    """Write the new notebook and its ``tools/pages.toml`` entry; return the notebook's path.

    CourseError (nothing written) for a malformed name or title, a number that is not past
    the last page, or a file that already exists.
    """
    match = NAME.fullmatch(name.strip())
    if not match or len(match["slug"]) > 60:
        raise CourseError(f"NAME={name!r}: use lowercase words joined by '-', e.g. the-ttl")
    title, summary = title.strip(), (summary.strip() or SUMMARY)
    if not title or "\n" in title or "\n" in summary:
        raise CourseError("TITLE must be one non-empty line (and SUMMARY one line)")
    pages = load(root)
    last = max((p.number for p in pages), default=-1)
    number = int(match["number"]) if match["number"] else last + 1
    if number <= last or number > 99:
        raise CourseError(f"page number {number:02d} must come after the last page ({last:02d})")
    file = f"{number:02d}-{match['slug']}.ipynb"
    path = root / NOTEBOOKS / file
    if path.exists():
        raise CourseError(f"{NOTEBOOKS}/{file} already exists")
    if not pages:
        raise CourseError(f"{PAGES} lists no hub page to link the new page to")
    queue = f"{match['slug']}-{number:02d}"
    cells = spine(title, summary, queue, pages[0], number)
    path.write_text(dump_notebook(notebook(cells, path.stem)), encoding="utf-8")
    with (root / PAGES).open("a", encoding="utf-8") as out:
        out.write(entry_toml(file, title, summary))
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the command line; print the new notebook's path (relative to the root)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="lowercase-words, optionally NN-first")
    parser.add_argument("--title", required=True, help="the page's title (its first heading)")
    parser.add_argument("--summary", default="", help="one line for the tables of pages")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: ours)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        path = create(root, args.name, args.title, args.summary)
    except CourseError as exc:
        print(f"page: {exc}", file=sys.stderr)
        return 1
    print(path.relative_to(root).as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main())
