// The reader's progress across the module, shown on the hub page: read from what this browser
// keeps of each page (echomq_lab/widgets/answers.js: opened, answers, verdicts), sent nowhere.
// Shared by the static site (tools/site/autorun.js) and the app (echomq_lab/widgets/app_page.js).
//
// The hub's table of every page (written by tools/nav.py from tools/pages.toml) gets a column,
// "Your answers": for each page, how many of its self-checks the reader has answered and how
// many the server found right ("not opened yet" before that). Below the table, a short summary
// of the whole module: pages opened, checks answered and right, the pages with a check still
// to answer or to pick again. It names no question's answer and no choice: only counts and
// pages. The self-checks of each page (their questions) come with the page, as JSON in
// #emq-course ({"checks": {slug: [question, ...]}}), from echomq_lab/lessons/questions.toml.
window.emqProgress = (function () {
  "use strict";
  const ADDED = "emq-progress";
  const PAGE = /(?:^|\/)(\d\d)-([a-z0-9-]+)\.ipynb$/;

  /** The page file a link leads to ("03-the-payload.ipynb"), or "" for any other link. */
  function fileOf(anchor) {
    let path = "";
    try {
      path = decodeURIComponent(new URL(anchor.getAttribute("href") || "", window.location.href)
        .pathname);
    } catch (e) { return ""; }
    const match = path.match(PAGE);
    if (match) return `${match[1]}-${match[2]}.ipynb`;
    const asked = new URL(anchor.href, window.location.href).searchParams.get("path") || "";
    return PAGE.test(asked) ? asked : "";
  }

  const slugOf = (file) => file.replace(/^\d\d-/, "").replace(/\.ipynb$/, "");

  /** The checks of every page, by slug (from #emq-course). */
  function checksBySlug() {
    const data = document.getElementById("emq-course");
    try { return (data && JSON.parse(data.textContent).checks) || {}; } catch (e) { return {}; }
  }

  /** The hub's table of pages in ``root``: the table with a row that says "this page" and
   *  rows that link pages (a page the front end leaves out is named without a link); null if
   *  ``root`` has none. */
  function hubTable(root) {
    for (const table of root.querySelectorAll("table")) {
      const rows = [...table.querySelectorAll("tbody tr")];
      const linked = rows.filter((row) => [...row.querySelectorAll("a")].some(fileOf));
      if (linked.length >= 2 && rows.some((row) => /\(this page\)/.test(row.textContent))) {
        return table;
      }
    }
    return null;
  }

  /** What this browser holds of one page: {opened, asked, answered, right, wrong}. */
  function pageState(kept, key, questions) {
    const answers = kept.read(key);
    const verdicts = kept.verdicts(key);
    const answered = questions.filter((q) => q in answers);
    return {
      opened: kept.opened(key) || answered.length > 0,
      asked: questions.length,
      answered: answered.length,
      right: answered.filter((q) => verdicts[q] === true).length,
      wrong: answered.filter((q) => verdicts[q] === false).length,
    };
  }

  function words(state) {
    if (!state.opened) return "not opened yet";
    if (!state.asked) return "opened";
    if (!state.answered) return `opened; 0 of ${state.asked} checks answered`;
    const right = `${state.right} right`;
    return `${state.answered} of ${state.asked} checks answered, ${right}`;
  }

  const STYLE = `
    .emq-summary { margin: 0.8em 0; padding: 6px 12px; border-left: 4px solid currentColor;
      border-radius: 2px; }
    .emq-summary ul { margin: 0.3em 0; padding-left: 1.4em; }
    .emq-summary p { margin: 0.3em 0 0; font-size: 0.92em; }`;

  function styled() {
    if (document.getElementById("emq-progress-style")) return;
    const style = document.createElement("style");
    style.id = "emq-progress-style";
    style.textContent = STYLE;
    document.head.appendChild(style);
  }

  function cell(tag, text) {
    const el = document.createElement(tag);
    el.className = ADDED;
    el.textContent = text;
    return el;
  }

  /** The summary under the table: the module in a few lines (counts and page titles only). */
  function summary(rows) {
    const box = document.createElement("section");
    box.className = `${ADDED} emq-summary`;
    box.setAttribute("aria-label", "Your progress through the module");
    const pages = rows.filter((r) => r.state);
    const opened = pages.filter((r) => r.state.opened).length;
    const asked = pages.reduce((n, r) => n + r.state.asked, 0);
    const answered = pages.reduce((n, r) => n + r.state.answered, 0);
    const right = pages.reduce((n, r) => n + r.state.right, 0);
    const toAnswer = pages.filter((r) => r.state.asked > r.state.answered);
    const again = pages.filter((r) => r.state.wrong > 0);
    const lines = [
      `Pages opened: ${opened} of ${pages.length}.`,
      `Self-checks answered: ${answered} of ${asked}; the server found ${right} right.`,
    ];
    if (again.length) {
      lines.push(`To pick again: ${again.map((r) => `${r.title} (${r.state.wrong})`)
        .join(", ")}.`);
    }
    lines.push(toAnswer.length
      ? `Still to answer: ${toAnswer.map((r) => `${r.title} (${r.state.asked - r.state.answered})`)
        .join(", ")}.`
      : "Every check of the module answered.");
    const title = document.createElement("strong");
    title.textContent = "Your module so far";
    box.appendChild(title);
    const list = document.createElement("ul");
    for (const line of lines) list.appendChild(cell("li", line));
    box.appendChild(list);
    const note = document.createElement("p");
    note.textContent = "Kept in this browser only. Start over, on a page, forgets that page's "
      + "answers.";
    box.appendChild(note);
    return box;
  }

  /** Show the reader's progress in the hub's table found in ``root`` (nothing if there is
   *  none), and the summary under it. ``keyOf(file)`` is the name this browser keeps a page
   *  under; ``here`` the hub's own file. Shown again (not added twice) on each call. */
  function show(root, keyOf, here) {
    const kept = window.emqAnswers;
    const table = root && kept && hubTable(root);
    if (!table) return false;
    styled();
    for (const old of table.parentNode.querySelectorAll(`.${ADDED}`)) old.remove();
    const checks = checksBySlug();
    const head = table.querySelector("thead tr");
    if (head) head.appendChild(cell("th", "Your answers"));
    const rows = [];
    for (const row of table.querySelectorAll("tbody tr")) {
      const link = [...row.querySelectorAll("a")].find(fileOf);
      const file = link ? fileOf(link) : (/\(this page\)/.test(row.textContent) ? here : "");
      const title = link ? link.textContent.trim()
        : ((row.querySelector("strong") || {}).textContent || "").trim();
      const state = file ? pageState(kept, keyOf(file), checks[slugOf(file)] || []) : null;
      rows.push({ title, state });
      row.appendChild(cell("td", state ? words(state) : "—"));
    }
    table.after(summary(rows));
    return true;
  }

  return { show, fileOf, hubTable };
})();
