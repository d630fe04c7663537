// The app's page (Voilà's lab template, echomq_lab/widgets/app.py): the reader's answers and
// place kept in this browser (echomq_lab/widgets/answers.js, loaded before this script), and a
// "Start over" button at the top of the page that forgets both and opens the page again.
//
// Once the page's panels are drawn (the number of cells and of drawn widgets steady for two
// seconds), the answers noted on this page are pressed again, then the page scrolls back to where
// the reader was, unless the reader has scrolled, clicked or pressed a key meanwhile; from then
// on the place is noted as the reader scrolls.
(function () {
  "use strict";
  const page = window.location.pathname;
  const kept = window.emqAnswers;
  const SCROLLER = "#rendered_cells";
  const blocks = () => [...document.querySelectorAll(`${SCROLLER} .jp-Cell`)];
  if ("scrollRestoration" in history) history.scrollRestoration = "manual"; // done here, below
  kept.record(page);

  let moved = false; // the reader's own scrolling, clicks and keys win over the kept place
  for (const kind of ["wheel", "touchmove", "keydown", "mousedown"]) {
    window.addEventListener(kind, () => { moved = true; }, { capture: true, passive: true });
  }

  const STYLE = `
    .emq-app-bar { display: flex; justify-content: flex-end; padding: 6px 12px 0; }
    .emq-app-bar button {
      font: inherit; font-size: var(--jp-ui-font-size1, 13px); cursor: pointer;
      color: var(--jp-ui-font-color1, #1a1a1a); background: var(--jp-layout-color2, #eee);
      border: 1px solid var(--jp-border-color1, #999); border-radius: 3px; padding: 3px 10px;
    }
    .emq-app-bar button:hover { background: var(--jp-layout-color3, #ddd); }
    .emq-app-bar button:focus-visible {
      outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 1px;
    }`;

  /** The bar with "Start over", first in the page's scrolling area. */
  function addBar(scroller) {
    const style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
    const bar = document.createElement("div");
    bar.className = "emq-app-bar";
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
    const cells = blocks().length;
    const now = `${cells}/${scroller.querySelectorAll(".jupyter-widgets").length}`;
    steady = cells > 0 && now === seen ? steady + 1 : 0;
    seen = now;
    if (steady < 4 && waited < 600) return;
    clearInterval(wait);
    await kept.replay(page, document, () => Promise.resolve());
    const place = kept.place(page);
    if (place && !moved) kept.goTo(scroller, blocks(), place);
    kept.keepPlace(page, scroller, blocks);
  }, 500);
})();
