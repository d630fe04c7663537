// The app's page (Voilà's lab template, echomq_lab/widgets/app.py): the reader's answers and
// place kept in this browser (echomq_lab/widgets/answers.js, loaded before this script), and a
// bar at the top of the page: "← previous · hub · next →" (the links of the page's own
// navigation cell, which tools/nav.py writes from tools/pages.toml) and "Start over", which
// forgets the page's answers and place and opens the page again. On the hub, the reader's
// progress (echomq_lab/widgets/progress.js) in its table of pages and under it.
//
// Once the page's panels are drawn (the number of cells and of drawn widgets steady for two
// seconds), the answers noted on this page are pressed again, then the page scrolls back to where
// the reader was, unless the reader has scrolled, clicked or pressed a key meanwhile; from then
// on the place is noted as the reader scrolls.
(function () {
  "use strict";
  const page = window.location.pathname;
  const kept = window.emqAnswers;
  const progress = window.emqProgress;
  const SCROLLER = "#rendered_cells";
  const blocks = () => [...document.querySelectorAll(`${SCROLLER} .jp-Cell`)];
  if ("scrollRestoration" in history) history.scrollRestoration = "manual"; // done here, below
  // the app keeps a page's answers under its address; a page file's is this one's neighbour
  const keyOf = (file) => page.replace(/[^/]*$/, file);
  const here = decodeURIComponent(page.split("/").pop());
  const showProgress = () => progress && progress.show(document, keyOf, here);
  kept.record(page, showProgress);
  window.addEventListener("storage", showProgress); // answered in another tab

  let moved = false; // the reader's own scrolling, clicks and keys win over the kept place
  for (const kind of ["wheel", "touchmove", "keydown", "mousedown"]) {
    window.addEventListener(kind, () => { moved = true; }, { capture: true, passive: true });
  }

  const STYLE = `
    .emq-app-bar { display: flex; flex-wrap: wrap; justify-content: space-between;
      align-items: center; gap: 4px 12px; padding: 6px 12px 0; }
    .emq-app-pages { display: flex; flex-wrap: wrap; gap: 2px 6px; align-items: center; }
    .emq-app-pages a { color: var(--jp-content-link-color, #1976d2); font-weight: 600; }
    .emq-app-pages a:focus-visible { outline: 3px solid var(--jp-brand-color1, #1976d2);
      outline-offset: 1px; }
    .emq-app-bar button {
      font: inherit; font-size: var(--jp-ui-font-size1, 13px); cursor: pointer;
      color: var(--jp-ui-font-color1, #1a1a1a); background: var(--jp-layout-color2, #eee);
      border: 1px solid var(--jp-border-color1, #999); border-radius: 3px; padding: 3px 10px;
    }
    .emq-app-bar button:hover { background: var(--jp-layout-color3, #ddd); }
    .emq-app-bar button:focus-visible {
      outline: 3px solid var(--jp-brand-color1, #1976d2); outline-offset: 1px;
    }`;

  /** The link of the page's navigation cell on its line "<label>:" (null if none). */
  function navLink(label) {
    for (const item of document.querySelectorAll(`${SCROLLER} li`)) {
      const lead = item.querySelector("strong");
      const link = item.querySelector("a[href]");
      if (lead && link && lead.textContent.trim() === `${label}:`) return link;
    }
    return null;
  }

  /** "← previous · hub · next →" in ``nav``, from the page's navigation cell, once it is
   *  drawn (false until then). */
  function fillNav(nav) {
    const prev = navLink("Previous");
    const next = navLink("Next");
    const up = navLink("Up");
    if (!next) return false;
    const parts = [];
    const link = (href, text, label, current) => {
      const a = document.createElement("a");
      a.href = href;
      a.textContent = text;
      a.setAttribute("aria-label", label);
      if (current) a.setAttribute("aria-current", "page");
      parts.push(a);
    };
    if (prev) link(prev.href, `← ${prev.textContent.trim()}`, `Previous page: ${prev.textContent.trim()}`);
    if (up) link(up.href, "hub", `The module's hub: ${up.textContent.trim()}`);
    else link(window.location.href, "hub", "The module's hub: this page", true);
    if (next) {
      const back = up && next.href === up.href;
      link(next.href, back ? "back to the start →" : `${next.textContent.trim()} →`,
        back ? `Back to the start: ${next.textContent.trim()}` : `Next page: ${next.textContent.trim()}`);
    }
    parts.forEach((part, i) => {
      if (i) nav.appendChild(document.createTextNode("·"));
      nav.appendChild(part);
    });
    return true;
  }

  /** The bar with the page links and "Start over", first in the page's scrolling area. */
  function addBar(scroller) {
    const style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
    const bar = document.createElement("div");
    bar.className = "emq-app-bar";
    const nav = document.createElement("nav");
    nav.className = "emq-app-pages";
    nav.setAttribute("aria-label", "Pages of the module");
    bar.appendChild(nav);
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Start over";
    button.title = "Forget your answers and your place on this page, and open it from the top";
    button.addEventListener("click", () => {
      kept.clear(page);
      window.location.reload();
    });
    bar.appendChild(button);
    scroller.prepend(bar);
  }

  let seen = "", steady = 0, waited = 0;
  const wait = setInterval(async () => {
    waited += 1;
    const scroller = document.querySelector(SCROLLER);
    if (!scroller) return;
    if (!scroller.querySelector(".emq-app-bar")) addBar(scroller);
    const nav = scroller.querySelector(".emq-app-pages");
    if (!nav.childElementCount) fillNav(nav);
    const cells = blocks().length;
    const now = `${cells}/${scroller.querySelectorAll(".jupyter-widgets").length}`;
    steady = cells > 0 && now === seen ? steady + 1 : 0;
    seen = now;
    if (steady < 4 && waited < 600) return;
    clearInterval(wait);
    showProgress();
    await kept.replay(page, document, () => Promise.resolve());
    const place = kept.place(page);
    if (place && !moved) kept.goTo(scroller, blocks(), place);
    kept.keepPlace(page, scroller, blocks);
  }, 500);
})();
