"""axe-core run in a page open in headless Chromium: its WCAG 2 A/AA violations of a blocking
impact (serious or critical).

axe-core is the npm package pinned in tools/axe/package.json, installed into
tools/axe/node_modules by ``npm ci --prefix tools/axe``. Importing this module starts nothing
and imports no browser driver; the page is given by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: The pages axe holds to the rules, by slug: the module's hub, its three dives, the first lab.
PAGES = ("the-record-hash", "the-hash-and-its-fields", "the-state-and-attempts", "the-payload",
         "lab-two-workers-one-job")
#: The impacts that fail a test.
BLOCKING = ("serious", "critical")
#: axe on ``within`` (a CSS selector, every element it matches) or, given null, the document;
#: a node matching the selector paired with its rule in ``ignore`` is not counted for that rule.
RUN_AXE = """async ([within, ignore]) => {
    const result = await axe.run(within === null ? document : within,
                                 {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']},
                                  elementRef: true});
    const ignored = (id, node) => ignore.some(([rule, sel]) => rule === id
                                              && node.element && node.element.matches(sel));
    return result.violations.map(v => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.filter(n => !ignored(v.id, n))
                      .map(n => n.target.join(' ') + ' ' + n.html.slice(0, 120))}))
        .filter(v => v.nodes.length > 0);
}"""


def missing() -> str | None:
    """Why axe-core cannot run here (not installed), or None when it can."""
    if AXE.exists():
        return None
    return f"axe-core is not installed in {AXE.parent.parent}: run npm ci --prefix tools/axe"


def violations(
    page: Page, within: str | None = None, ignore: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """axe's WCAG 2 A/AA violations of a blocking impact on ``page``: on the whole document, or
    only inside the elements matched by the CSS selector ``within``; an element matching the
    selector of an ``ignore`` pair (rule id, CSS selector) is not counted for that rule only.
    Each is a dict with the rule's ``id``, ``impact``, ``help`` and ``nodes`` (each its selector
    and a head of its HTML); a rule left with no node is not listed."""
    if page.evaluate("() => typeof window.axe === 'undefined'"):
        page.add_script_tag(content=AXE.read_text())
    found: list[dict[str, Any]] = page.evaluate(RUN_AXE, [within, [list(p) for p in ignore]])
    return [v for v in found if v["impact"] in BLOCKING]


def said(found: list[dict[str, Any]]) -> str:
    """``found`` as lines to read in a failure: each rule, its impact, count and first nodes."""
    return "\n".join(f"{v['id']} ({v['impact']}, {len(v['nodes'])}): {v['help']}\n    "
                     + "\n    ".join(v["nodes"][:5]) for v in found)
