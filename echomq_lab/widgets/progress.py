"""What a page's browser script needs to show the reader's progress (``progress.js``): each
page's self-check questions, by the page's slug, from ``echomq_lab/lessons/questions.toml``;
and, where the front end knows them, the pages in reading order (the static site passes its
own, from ``tools/pages.toml``). Written into the page as a JSON script element,
``#emq-course``, by the app (``app.py``) and the site's build (``tools/site/build.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from echomq_lab.lessons import checks

#: The id of the JSON script element the page scripts read.
ELEMENT = "emq-course"


def questions() -> dict[str, list[str]]:
    """Every page's self-check questions, in page order, by the page's slug."""
    return {slug: [c.question for c in checks.for_page(slug)] for slug in checks.pages()}


def course_script(pages: Sequence[tuple[str, str]] = ()) -> str:
    """The ``<script type="application/json" id="emq-course">`` element: ``{"pages": [{"file",
    "title"}, ...], "checks": {slug: [question, ...]}}`` (``pages``: (file, title) pairs in
    reading order; none given, an empty list)."""
    data = {"pages": [{"file": f, "title": t} for f, t in pages], "checks": questions()}
    text = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    return f'<script id="{ELEMENT}" type="application/json">{text}</script>'
