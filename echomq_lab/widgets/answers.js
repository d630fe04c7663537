// The reader's own state of a page, kept in this browser and sent nowhere: the self-check
// answers and the place on the page. Shared by the static site (tools/site/autorun.js) and the
// app (echomq_lab/widgets/app_page.js).
//
// Answers: each press on a self-check's choice is noted in localStorage
// ("emq-answers:<page>": question -> the choice's text); once the page's panels are live again
// (a reload, a return), each noted choice is pressed again, so the server grades it again.
// Verdicts: whether the server found each noted choice right ("emq-right:<page>": question ->
// true or false), read off the pressed button once it is marked; the hub's progress reads them
// (echomq_lab/widgets/progress.js). Opened: "emq-opened:<page>" is set once the page opens.
// Place: the block at the top of the page's view and how far below the view's top it sits
// ("emq-place:<page>": {index, offset}), noted as the reader scrolls. "Start over" clears the
// answers, the verdicts and the place (the page stays opened).
window.emqAnswers = (function () {
  "use strict";
  const CHECK = ".emq-selfcheck";
  const keyOf = (page) => `emq-answers:${page}`;
  const placeKey = (page) => `emq-place:${page}`;
  const rightKey = (page) => `emq-right:${page}`;
  const openedKey = (page) => `emq-opened:${page}`;
  // How long a press may wait for its verdict (the server grades it).
  const VERDICT_MS = 60000;
  let replaying = false;

  function load(key, fallback) {
    try { return JSON.parse(localStorage.getItem(key)) || fallback; } catch (e) { return fallback; }
  }

  function save(key, value) {
    try { localStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* storage off */ }
  }

  function read(page) {
    return load(keyOf(page), {});
  }

  /** A check's question: the bold line above its choices. */
  function questionOf(check) {
    const prompt = check.querySelector("b");
    return prompt ? prompt.textContent.trim() : "";
  }

  /** Whether the server found each noted choice on ``page`` right (question -> boolean). */
  function verdicts(page) {
    return load(rightKey(page), {});
  }

  /** Whether ``page`` has been opened in this browser. */
  function opened(page) {
    return load(openedKey(page), false) === true;
  }

  /** Once the pressed ``button`` is marked right or wrong (ipywidgets' success and danger
   *  styles, which the self-check gives the picked choice), note the verdict of ``question``;
   *  ``then()`` is called after. A button still unmarked after VERDICT_MS is left unnoted. */
  function noteVerdict(page, question, button, then) {
    const started = Date.now();
    const look = setInterval(() => {
      const right = button.classList.contains("mod-success");
      const wrong = button.classList.contains("mod-danger");
      if (!right && !wrong && Date.now() - started < VERDICT_MS) return;
      clearInterval(look);
      if (right || wrong) {
        save(rightKey(page), { ...verdicts(page), [question]: right });
        if (then) then();
      }
    }, 150);
  }

  /** Note ``page`` opened, and every choice the reader presses on it with its verdict;
   *  ``changed()`` (optional) is called once a verdict is noted. */
  function record(page, changed) {
    save(openedKey(page), true);
    document.addEventListener("click", (event) => {
      const button = event.target.closest && event.target.closest(`${CHECK} button`);
      if (!button) return;
      const question = questionOf(button.closest(CHECK));
      if (!question) return;
      if (!replaying) save(keyOf(page), { ...read(page), [question]: button.textContent.trim() });
      const mine = verdicts(page);
      if (!replaying && question in mine) { // a new pick: its verdict is not known yet
        delete mine[question];
        save(rightKey(page), mine);
      }
      noteVerdict(page, question, button, changed);
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

  /** Where the reader is in ``scroller``: the first of ``blocks`` (elements in page order) not
   *  yet scrolled past, and how far its top sits below the scroller's. */
  function placeIn(scroller, blocks) {
    const top = scroller.getBoundingClientRect().top;
    for (let i = 0; i < blocks.length; i++) {
      const box = blocks[i].getBoundingClientRect();
      if (box.bottom > top + 1) return { index: i, offset: box.top - top };
    }
    return { index: 0, offset: 0 };
  }

  /** Scroll ``scroller`` so that ``place`` is where it was; false if its block is not there. */
  function goTo(scroller, blocks, place) {
    const block = place && blocks[place.index];
    if (!block) return false;
    scroller.scrollTop += block.getBoundingClientRect().top
      - scroller.getBoundingClientRect().top - (place.offset || 0);
    return true;
  }

  /** The place noted on ``page`` (null if none). */
  function place(page) {
    return load(placeKey(page), null);
  }

  /** Note the reader's place on ``page`` as they scroll ``scroller`` (``blocks()`` gives the
   *  page's blocks in order), a moment after the scrolling stops. */
  function keepPlace(page, scroller, blocks) {
    let pending = null;
    scroller.addEventListener("scroll", () => {
      clearTimeout(pending);
      pending = setTimeout(() => save(placeKey(page), placeIn(scroller, blocks())), 300);
    }, { passive: true });
  }

  /** Forget what was kept of ``page``: its answers, their verdicts and its place. */
  function clear(page) {
    try {
      localStorage.removeItem(keyOf(page));
      localStorage.removeItem(rightKey(page));
      localStorage.removeItem(placeKey(page));
    } catch (e) { /* storage off: nothing kept */ }
  }

  return { record, read, verdicts, opened, replay, placeIn, goTo, place, keepPlace, clear };
})();
