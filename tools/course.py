"""The reading order (tools/pages.toml) and the navigation written from it.

One list says which notebooks make up the course and in what order. Each page is named by its
slug (``the-payload``); its file is ``NN-<slug>.ipynb``, NN its place in the list, so nothing
else stores a page's number. From the list come each notebook's navigation cell (previous / up
to the hub / next; the hub's also holds the table of every page) and its note on how the page
comes alive in JupyterLab (second on the page) and its kernel's name, README's reading-order table
between its marker comments, and the pages the static site carries (:func:`site_pages`).
Standard library only, so the tools run with any Python 3.11+.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = Path("tools") / "pages.toml"
NOTEBOOKS = Path("notebooks")
README = Path("README.md")
#: The tag that marks the generated navigation cell of a notebook.
TAG = "navigation"
#: Every page's kernel, named as ipykernel's own kernel spec names itself: JupyterLab writes the
#: running kernel's spec into the page once the kernel starts, so a page that names it any
#: other way opens marked as modified.
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: The tag of the generated cell, second on every page, that tells a reader in JupyterLab how
#: the page comes alive (the app and the static site leave it out: they run the page).
RUN_TAG = "how-to-run"
#: What that cell says.
RUN_NOTE = ("*In JupyterLab, **Run ▸ Run All Cells** brings this page's panels alive. "
            "The app and the browser version run it by themselves.*")
README_START = "<!-- reading-order:start (written by make nav from tools/pages.toml) -->"
README_END = "<!-- reading-order:end -->"
KINDS = ("hub", "page", "lab")
#: A page's name: lowercase words joined by '-', the first beginning with a letter.
SLUG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
#: A course notebook's file name: its two-digit place in the list, then its slug.
FILE = re.compile(r"(?P<number>\d\d)-(?P<slug>[a-z0-9]+(?:-[a-z0-9]+)*)\.ipynb")
#: The keys a ``[[page]]`` entry may hold (the first four are required).
KEYS = ("slug", "kind", "title", "summary", "note", "offsite")
#: A hand-written navigation line (before the cells were generated): "- **Next:** ...".
LEGACY = re.compile(r"^\s*-\s*\*\*(?:Previous|Next|Up):\*\*", re.MULTILINE)


class CourseError(Exception):
    """The reading order cannot be used as it stands; the message says what to change."""


@dataclass(frozen=True)
class Page:
    """One entry of the reading order; ``number`` is its place in the list (the hub is 0)."""

    number: int
    slug: str
    kind: str
    title: str
    summary: str
    note: str = ""
    #: Why the static site leaves the page out ('' when the site carries it).
    offsite: str = ""

    @property
    def file(self) -> str:
        """The notebook's file name in ``notebooks/``: ``NN-<slug>.ipynb``."""
        return file_name(self.number, self.slug)


def file_name(number: int, slug: str) -> str:
    """The file of the page called ``slug`` at place ``number`` of the list."""
    return f"{number:02d}-{slug}.ipynb"


def load(root: Path = ROOT) -> list[Page]:
    """The entries of ``tools/pages.toml`` in order; CourseError names a malformed entry."""
    path = root / PAGES
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CourseError(f"{PAGES}: {exc}") from exc
    pages: list[Page] = []
    for number, entry in enumerate(data.get("page", [])):
        where = f"{PAGES} entry {number + 1}"
        unknown = set(entry) - set(KEYS)
        if unknown:
            raise CourseError(f"{where}: unknown keys {sorted(unknown)} (keys: {', '.join(KEYS)})")
        for key in KEYS[:4]:
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise CourseError(f"{where}: '{key}' must be a non-empty string")
        for key in KEYS[4:]:
            if not isinstance(entry.get(key, ""), str):
                raise CourseError(f"{where}: '{key}' must be a string")
        if not SLUG.fullmatch(entry["slug"]):
            raise CourseError(f"{where}: slug {entry['slug']!r} is not lowercase-words")
        if entry["kind"] not in KINDS:
            raise CourseError(f"{where}: kind {entry['kind']!r} is not one of {KINDS}")
        if entry["slug"] in {p.slug for p in pages}:
            raise CourseError(f"{where}: the slug {entry['slug']!r} is listed twice")
        pages.append(Page(number, entry["slug"], entry["kind"], entry["title"], entry["summary"],
                          entry.get("note", ""), entry.get("offsite", "")))
    if len(pages) > 100:
        raise CourseError(f"{PAGES}: {len(pages)} pages; two-digit numbers stop at 99")
    return pages


def find(pages: list[Page], slug: str) -> Page:
    """The page called ``slug``; CourseError (one line) naming every slug when none is."""
    for page in pages:
        if page.slug == slug:
            return page
    raise CourseError(f"no page called {slug!r} in {PAGES}; the pages are "
                      f"{', '.join(p.slug for p in pages)}")


def file_of(slug: str, root: Path = ROOT) -> str:
    """The notebook file of the page called ``slug`` (e.g. ``04-lab-two-workers-one-job.ipynb``
    for ``lab-two-workers-one-job``); CourseError naming every slug when none is called so."""
    return find(load(root), slug).file


def site_pages(root: Path = ROOT) -> tuple[list[str], dict[str, str]]:
    """(the files the static site carries, in reading order; {file: why it is left out}).

    A page is left out when its entry gives ``offsite``, the reason, in a few words that end
    a sentence like "not in the browser version: <reason>".
    """
    pages = load(root)
    return ([p.file for p in pages if not p.offsite],
            {p.file: p.offsite for p in pages if p.offsite})


def first_heading(nb: dict[str, Any]) -> str:
    """The text of the notebook's first ``# `` heading, or '' if it has none."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in source(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def problems(pages: list[Page], root: Path = ROOT) -> list[str]:
    """Every way the list and the notebooks on disk disagree, one line each (empty: none)."""
    found = []
    if not pages:
        return [f"{PAGES} lists no pages"]
    if [p.kind for p in pages].count("hub") != 1 or pages[0].kind != "hub":
        found.append(f"{PAGES}: the first entry, and only it, must be kind = \"hub\"")
    listed = {p.file for p in pages}
    numbered = {p.slug: p.file for p in pages}
    for page in pages:
        path = root / NOTEBOOKS / page.file
        if not path.is_file():
            found.append(f"{PAGES} lists {page.file}, which is not in {NOTEBOOKS}/")
            continue
        heading = first_heading(read_notebook(path))
        if heading != page.title:
            found.append(f"{page.file}: title {page.title!r} in {PAGES}, "
                         f"but the notebook's heading is {heading!r}")
    for path in sorted((root / NOTEBOOKS).glob("[0-9][0-9]-*.ipynb")):
        if path.name in listed:
            continue
        match = FILE.fullmatch(path.name)
        slug = match["slug"] if match else path.stem[3:]
        if slug in numbered:
            found.append(f"{NOTEBOOKS}/{path.name}: its place in {PAGES} makes it "
                         f"{numbered[slug]}; rename it (git mv)")
        else:
            found.append(f"{NOTEBOOKS}/{path.name} is not in {PAGES}; add:\n"
                         + entry_toml(slug, first_heading(read_notebook(path))))
    return found


def entry_toml(slug: str, title: str, summary: str = "", kind: str = "") -> str:
    """A ``[[page]]`` block for ``tools/pages.toml`` (strings escaped as TOML basic strings)."""
    kind = kind or ("lab" if slug.startswith("lab-") else "page")
    quoted = [json.dumps(v, ensure_ascii=False) for v in (slug, kind, title, summary or "…")]
    return "\n[[page]]\nslug = {}\nkind = {}\ntitle = {}\nsummary = {}\n".format(*quoted)


def _cell(text: str) -> str:
    """``text`` made safe inside a markdown table cell."""
    return text.replace("|", "\\|")


def _link(page: Page) -> str:
    """A relative link to the page's notebook: it opens in JupyterLab and in Voilà alike."""
    return f"[{page.title}]({page.file})"


def hub_table(pages: list[Page]) -> str:
    """The hub's table of every page, in reading order, linking each other notebook."""
    rows = ["## Every page, in reading order", "",
            "| # | page | what you come away with |", "|---|---|---|"]
    for page in pages:
        name = f"**{page.title}** (this page)" if page.kind == "hub" else _link(page)
        rows.append(f"| {page.number} | {_cell(name)} | {_cell(page.summary)} |")
    return "\n".join(rows)


def nav_text(pages: list[Page], index: int) -> str:
    """The navigation cell of ``pages[index]``: previous, next and up (plus the hub's table)."""
    page, hub = pages[index], pages[0]
    lines = ["---"]
    if index == 0:
        lines.append("- **Previous:** none — this is the first page.")
    else:
        lines.append(f"- **Previous:** {_link(pages[index - 1])}")
    if index + 1 < len(pages):
        lines.append(f"- **Next:** {_link(pages[index + 1])}")
    else:
        lines.append(f"- **Next:** back to the start, {_link(hub)}")
    if page.kind != "hub":
        lines.append(f"- **Up:** {_link(hub)} — the module hub")
    text = "\n".join(lines)
    return hub_table(pages) + "\n\n" + text if page.kind == "hub" else text


def readme_table(pages: list[Page]) -> str:
    """README's reading-order table, linking each notebook from the repository root."""
    rows = ["| # | notebook | what you come away with |", "|---|---|---|"]
    for page in pages:
        name = f"[`{page.file}`]({NOTEBOOKS.as_posix()}/{page.file})"
        if page.note:
            name += f" — {page.note}"
        rows.append(f"| {page.number} | {_cell(name)} | {_cell(page.summary)} |")
    return "\n".join(rows)


def source(cell: dict[str, Any]) -> str:
    """A cell's source as one string (notebooks store it as a list of lines or a string)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def read_notebook(path: Path) -> dict[str, Any]:
    """The notebook at ``path`` as plain JSON data."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def dump_notebook(nb: dict[str, Any]) -> str:
    """The notebook as Jupyter stores it (indent 1, sorted keys, UTF-8), so diffs stay small."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def nav_cell_index(nb: dict[str, Any]) -> int | None:
    """The cell tagged ``navigation``; else the last hand-written navigation cell; else None."""
    cells = nb["cells"]
    for i, cell in enumerate(cells):
        if TAG in cell.get("metadata", {}).get("tags", []):
            return i
    legacy = [i for i, c in enumerate(cells)
              if c["cell_type"] == "markdown" and LEGACY.search(source(c))]
    return legacy[-1] if legacy else None


def stray_nav_cells(nb: dict[str, Any]) -> list[int]:
    """Untagged cells that look like navigation, in a notebook that has a tagged one."""
    return [i for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "markdown" and LEGACY.search(source(c))
            and TAG not in c.get("metadata", {}).get("tags", [])]


def with_nav(nb: dict[str, Any], text: str) -> dict[str, Any]:
    """``nb`` with its navigation cell, last, holding ``text`` (tagged; added if missing)."""
    lines = text.splitlines(keepends=True)
    index = nav_cell_index(nb)
    if index is None:
        cell: dict[str, Any] = {"cell_type": "markdown", "metadata": {}, "source": []}
        if nb.get("nbformat", 4) == 4 and nb.get("nbformat_minor", 0) >= 5:
            ids = {c.get("id") for c in nb["cells"]}
            cell["id"] = next(n for n in (f"{TAG}{s}" for s in ("", *range(1, 99)))
                              if n not in ids)
        nb["cells"].append(cell)
        index = len(nb["cells"]) - 1
    cell = nb["cells"].pop(index)
    nb["cells"].append(cell)  # navigation closes the page, whatever was added after it
    tags = [t for t in cell.get("metadata", {}).get("tags", []) if t != TAG]
    cell.setdefault("metadata", {})["tags"] = [*tags, TAG]
    cell["source"] = lines
    return nb


def with_run_note(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` with its run note (:data:`RUN_NOTE`, tagged :data:`RUN_TAG`) second, right after
    the page's opening cell (added if missing; moved there if it is elsewhere)."""
    cells = nb["cells"]
    found = [i for i, c in enumerate(cells) if RUN_TAG in c.get("metadata", {}).get("tags", [])]
    if found:
        cell = cells.pop(found[0])
        for extra in reversed(found[1:]):
            cells.pop(extra - 1)
    else:
        cell = {"cell_type": "markdown", "metadata": {"tags": [RUN_TAG]}, "source": []}
        if nb.get("nbformat", 4) == 4 and nb.get("nbformat_minor", 0) >= 5:
            ids = {c.get("id") for c in cells}
            cell["id"] = next(n for n in (f"{RUN_TAG}{s}" for s in ("", *range(1, 99)))
                              if n not in ids)
    cell["source"] = RUN_NOTE.splitlines(keepends=True)
    cells.insert(min(1, len(cells)), cell)
    return nb


def with_readme_table(readme: str, table: str) -> str:
    """``readme`` with the text between the reading-order markers replaced by ``table``."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise CourseError(f"{README} lacks the markers {README_START!r} … {README_END!r}")
    return readme[: start + len(README_START)] + "\n" + table + "\n" + readme[end:]


def written(root: Path = ROOT) -> dict[Path, str]:
    """{path: the text ``make nav`` writes there}, for every notebook and README.

    Raises CourseError listing every problem when the list and the notebooks disagree.
    """
    pages = load(root)
    found = problems(pages, root)
    if found:
        raise CourseError("\n".join(found))
    out = {}
    for index, page in enumerate(pages):
        path = root / NOTEBOOKS / page.file
        stored = read_notebook(path)
        # strays are named by their place in the file as it is
        strays = stray_nav_cells(with_nav(read_notebook(path), nav_text(pages, index)))
        nb = with_nav(with_run_note(stored), nav_text(pages, index))
        nb.setdefault("metadata", {})["kernelspec"] = dict(KERNEL)
        found += [f"{page.file}: cell {i} is hand-written navigation beside the generated "
                  "one; delete it" for i in strays]
        out[path] = dump_notebook(nb)
    if found:
        raise CourseError("\n".join(found))
    readme = (root / README).read_text(encoding="utf-8")
    out[root / README] = with_readme_table(readme, readme_table(pages))
    return out


#: What a page's run reads besides its notebook: the package (handles, scripts, panels, the
#: questions), the data files beside the notebooks, and how a page is stored. A change to any
#: of them can change what every page prints or draws.
READ_BY_PAGES = ("echomq_lab/", "notebooks/", "tools/store.py", "pyproject.toml")


def changed(base: str, root: Path = ROOT, why: list[str] | None = None) -> list[str]:
    """The notebooks (``notebooks/*.ipynb``, as paths from ``root``) whose stored outputs may
    no longer be what they show, against the commit where this branch left ``base``
    (committed since, or not yet): those that differ or are new, and every notebook when a file
    the pages read (:data:`READ_BY_PAGES`) differs; every notebook when git cannot tell (no such
    ``base``, no git). ``why``, if given, gets one line per reason."""
    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True)
        return done.stdout.split()

    said = why if why is not None else []
    every = sorted(p.relative_to(root).as_posix() for p in (root / NOTEBOOKS).glob("*.ipynb"))
    try:
        fork = git("merge-base", "HEAD", base)[0]
        names = git("diff", "--name-only", fork)
        names += git("ls-files", "--others", "--exclude-standard")
    except (OSError, subprocess.CalledProcessError, IndexError):
        said.append(f"git cannot compare with {base!r}: every page")
        return every
    read = sorted(n for n in set(names) if n.startswith(READ_BY_PAGES) and n not in every
                  and not n.endswith(".ipynb"))
    if read:
        more = f" and {len(read) - 1} more" if len(read) > 1 else ""
        verb = "differ" if more else "differs"
        said.append(f"{read[0]}{more} {verb} from {base}, and pages read them: every page")
        return every
    return [n for n in every if n in names]


def main(argv: list[str]) -> int:
    """``python tools/course.py file SLUG...``: print each page's notebook path (``make notebooks
    PAGE=SLUG`` stores that one); a slug that names no page is one line on stderr, and 2.
    ``python tools/course.py changed``: the notebooks whose stored outputs may be stale against
    ``$CHECK_BASE`` (main), one a line, and why on stderr (``make check`` runs them)."""
    if argv == ["changed"]:
        why: list[str] = []
        found = changed(os.environ.get("CHECK_BASE") or "main", why=why)
        for line in why:
            print(f"make check: {line}", file=sys.stderr)
        print("\n".join(found))
        return 0
    if len(argv) < 2 or argv[0] != "file":
        print("usage: python tools/course.py file SLUG... | changed", file=sys.stderr)
        return 2
    try:
        pages = load()
        # a notebook beside the course's pages (the workshop's board) by its own name
        print("\n".join((NOTEBOOKS / f"{slug}.ipynb").as_posix()
                        if SLUG.fullmatch(slug) and (ROOT / NOTEBOOKS / f"{slug}.ipynb").is_file()
                        else (NOTEBOOKS / find(pages, slug).file).as_posix()
                        for slug in argv[1:]))
    except CourseError as exc:
        print(f"PAGE={' '.join(argv[1:])!r}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
