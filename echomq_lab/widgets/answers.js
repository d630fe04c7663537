// The reader's self-check answers, kept in this browser: each press on a self-check's choice
// is noted in localStorage ("emq-answers:<page>": question -> the choice's text), nothing sent
// anywhere; once the page's panels are live again (a reload, a return), each noted choice is
// pressed again, so the server grades it again. Shared by the static site
// (tools/site/autorun.js) and the app (echomq_lab/widgets/app.py's page template).
window.emqAnswers = (function () {
  "use strict";
  const CHECK = ".emq-selfcheck";
  const keyOf = (page) => `emq-answers:${page}`;
  let replaying = false;

  function read(page) {
    try { return JSON.parse(localStorage.getItem(keyOf(page))) || {}; } catch (e) { return {}; }
  }

  /** A check's question: the bold line above its choices. */
  function questionOf(check) {
    const prompt = check.querySelector("b");
    return prompt ? prompt.textContent.trim() : "";
  }

  /** Note every choice the reader presses on ``page``. */
  function record(page) {
    document.addEventListener("click", (event) => {
      const button = !replaying && event.target.closest
        && event.target.closest(`${CHECK} button`);
      if (!button) return;
      const question = questionOf(button.closest(CHECK));
      if (!question) return;
      try {
        localStorage.setItem(keyOf(page), JSON.stringify(
          { ...read(page), [question]: button.textContent.trim() }));
      } catch (e) { /* storage off: nothing kept */ }
    }, true);
  }

  /** Press again, in page order, each choice noted on ``page`` for a check in ``root``;
   *  ``ready()`` (a promise) is awaited before each press. Returns how many were pressed. */
  async function replay(page, root, ready) {
    const answers = read(page);
    let pressed = 0;
    replaying = true;
    try {
      for (const check of root.querySelectorAll(CHECK)) {
        const choice = answers[questionOf(check)];
        const button = choice && [...check.querySelectorAll("button")]
          .find((b) => b.textContent.trim() === choice);
        if (!button) continue;
        await ready();
        button.click();
        pressed += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      replaying = false;
    }
    return pressed;
  }

  function clear(page) {
    try { localStorage.removeItem(keyOf(page)); } catch (e) { /* storage off */ }
  }

  return { record, replay, clear };
})();
