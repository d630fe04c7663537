"""The reader's probe: what a page built, asked in the kernel nbval ran the page in.

nbval runs each notebook once, cell by cell, in one kernel. For every page that asks self-checks
or invites the reader to use panels, :func:`attach` adds one more item right after the page's
last cell, ``<page>.ipynb::the reader's probe``, run in that same kernel before nbval stops it
(so the page is not run a second time for it). The probe reports, as JSON:

- every :class:`~echomq_lab.widgets.SelfCheck` alive in the kernel (found with
  ``gc.get_objects()``, since a page displays them without naming them), answered with each of
  its choices in turn: the page must make every check ``questions.toml`` gives it, every
  choice gets a verdict and an explanation, exactly one is right, and no wrong choice's
  explanation names the right one (answered in the page's own kernel, as a reader would);
- the text of every panel the page invites the reader to use, read after the whole page ran: it
  must be what the panel showed when it was displayed (ids and times sanitized as nbval does),
  so no cell pressed it afterwards, and the two-worker story waits at its first step.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

from echomq_lab.lessons import checks
from echomq_lab.lessons.two_workers import STEPS
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
#: The panels each page invites the reader to use, by the name the page gives them.
READER_PANELS = {
    "the-record-hash": ("picker",),
    "the-hash-and-its-fields": ("picker",),
    "the-state-and-attempts": ("panel", "fence", "story"),
    "the-payload": ("trip",),
    "lab-two-workers-one-job": ("story", "lab"),
    "lab-the-fence-under-load": ("sim",),
}
#: The pages showing the two-worker story, and the name they give it.
STORIES = {"the-state-and-attempts": "story", "lab-two-workers-one-job": "story"}


@functools.cache
def asked() -> dict[str, list[checks.Check]]:
    """The self-checks each page asks, by slug (pages that ask none are left out); read when
    first used, so a mistake in questions.toml fails the tests that read it, saying where, and
    not this module's import (and every test with it)."""
    return {slug: checks.for_page(slug) for slug in checks.pages()}


@functools.cache
def probed() -> dict[str, str]:
    """The slugs probed, by the page's file name."""
    return {p.file: p.slug for p in course_pages() if p.slug in asked() or p.slug in READER_PANELS}


def __getattr__(name: str) -> Any:
    """``CHECKS`` (:func:`asked`) and ``PROBED`` (:func:`probed`), read when first used."""
    if name == "CHECKS":
        return asked()
    if name == "PROBED":
        return probed()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

NAME = "the reader's probe"
#: How long the probe may take (it answers every choice of every check on the server).
TIMEOUT_S = 300

PROBE = """
import gc as _gc, json as _json
from echomq_lab.widgets import SelfCheck as _SelfCheck
_checks = []
for _c in {id(o): o for o in _gc.get_objects() if isinstance(o, _SelfCheck)}.values():
    _answers = []
    for _choice in _c.choices:
        _g = _c.answer(_choice)
        _answers.append({"choice": _choice, "right": _g.right, "explanation": _g.explanation})
    _c.reset()
    _checks.append({"question": _c.question, "answers": _answers, "after_reset": _c.text()})
_panels = {_n: globals()[_n].text() for _n in %(panels)r}
_stories = {_n: globals()[_n].story.next_step for _n in %(stories)r}
print(_json.dumps({"checks": _checks, "panels": _panels, "stories": _stories}))
"""


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def sanitized(text: str) -> str:
    """``text`` with notebooks/sanitize.cfg's regex/replace pairs applied, in order."""
    pattern = None
    for line in (NOTEBOOKS / "sanitize.cfg").read_text().splitlines():
        if line.startswith("regex:"):
            pattern = re.compile(line.removeprefix("regex:").strip())
        elif line.startswith("replace:") and pattern is not None:
            text = pattern.sub(line.removeprefix("replace:").strip(), text)
            pattern = None
    return text


def displayed_text(cells: list[Any], name: str) -> str:
    """The text/plain a cell ending in the bare expression ``name`` displayed."""
    for cell in cells:
        lines = _text(cell["source"]).strip().splitlines()
        if cell["cell_type"] == "code" and lines and lines[-1].strip() == name:
            for out in cell.get("outputs", []):
                if "text/plain" in out.get("data", {}):
                    return _text(out["data"]["text/plain"])
    raise AssertionError(f"no cell displays {name!r}")


def judge(slug: str, cells: list[Any], report: dict[str, Any]) -> None:
    """Fail, saying what is wrong, unless ``report`` (the probe's, on page ``slug`` whose
    stored cells are ``cells``) shows every check made and graded and every panel unpressed."""
    made = report["checks"]
    missing = {c.question for c in asked().get(slug, ())} - {c["question"] for c in made}
    assert not missing, f"page {slug} does not make the self-checks {missing}"
    for check in made:
        answers = check["answers"]
        assert len(answers) >= 2, f"{check['question']!r}: fewer than two choices"
        for a in answers:
            assert isinstance(a["right"], bool)
            assert a["explanation"].strip(), f"{check['question']!r} / {a['choice']!r}: no why"
        assert "Your answer" not in check["after_reset"], "reset left the verdict standing"
        rights = [a["choice"] for a in answers if a["right"]]
        assert len(rights) == 1, f"{check['question']!r}: right choices {rights}"
        for a in (a for a in answers if not a["right"]):
            assert not checks.gives_away(a["explanation"], rights[0]), (
                f"{check['question']!r}: the verdict on {a['choice']!r} names the answer")
    for name in READER_PANELS.get(slug, ()):
        shown = sanitized(displayed_text(cells, name))
        now = sanitized(report["panels"][name])
        assert now == shown, (
            f"page {slug}: after the whole page ran, {name!r} is not as it was when displayed "
            f"(a cell pressed it):\n--- displayed\n{shown}\n--- after the run\n{now}")
    for name, step in report["stories"].items():
        assert step == STEPS[0][0], f"page {slug}: the story {name!r} waits at {step!r}"


class ReaderProbe(pytest.Item):
    """The probe of one page, in the kernel nbval ran it in (the parent ``IPyNbFile``)."""

    def __init__(self, *, slug: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.slug = slug

    def runtest(self) -> None:
        notebook: Any = self.parent
        kernel = notebook.kernel
        if kernel is None or not kernel.is_alive():
            pytest.fail(f"{self.slug}: the page's kernel is gone (a cell above failed)")
        stories = tuple(s for s in (STORIES.get(self.slug),) if s)
        code = PROBE % {"panels": READER_PANELS.get(self.slug, ()), "stories": stories}
        msg_id = kernel.execute_cell_input(code, allow_stdin=False)
        out: list[str] = []
        while True:
            try:
                msg = kernel.get_message("iopub", timeout=TIMEOUT_S)
            except Empty:
                pytest.fail(f"{self.slug}: the probe did not finish in {TIMEOUT_S} s")
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "error":
                pytest.fail(f"{self.slug}: the probe raised {content['ename']}: "
                            f"{content['evalue']}", pytrace=False)
            if kind == "stream" and content.get("name") == "stdout":
                out.append(content["text"])
            if kind == "status" and content["execution_state"] == "idle":
                break
        # The probe's stdout may arrive in several stream messages: read them joined.
        report = json.loads("".join(out).strip().splitlines()[-1])
        judge(self.slug, notebook.nb.cells, report)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name}: {NAME}"


def attach(items: list[pytest.Item]) -> None:
    """Put a :class:`ReaderProbe` right after the last cell nbval collected of each probed
    page (in place, so it runs while that page's kernel is still up)."""
    last: dict[Path, int] = {}
    for i, item in enumerate(items):
        if type(item).__name__ == "IPyNbCell" and item.path.name in probed():
            last[item.path] = i
    for path, i in sorted(last.items(), key=lambda kv: kv[1], reverse=True):
        parent = items[i].parent
        assert parent is not None
        items.insert(i + 1, ReaderProbe.from_parent(parent, name=NAME, slug=probed()[path.name]))
