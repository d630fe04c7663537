// Opening a page runs it. Injected into the site's lab/index.html by tools/site/build.py.
//
// With ?path=<page>.ipynb, this waits for JupyterLite (window.jupyterapp, exposed by the site's
// config), finds the page, waits until the tab's Python answers, then runs every cell once, top
// to bottom, one after the other (a panel already drawn answers a press between two cells). The
// cue (#emq-cue, in the page's HTML from the first paint) says what is happening until the
// panels are live. A Run All pressed before the page's own run ends is that run; any other run
// or restart the reader presses before Python answers is kept and done once it does, never
// dropped. The page's own run does not leave it marked as modified, nor moves the focus.
(function () {
  "use strict";
  const path = new URLSearchParams(window.location.search).get("path");
  const cue = document.getElementById("emq-cue");
  if (!path || !cue) {
    if (cue) cue.remove();
    return;
  }
  // The address stays the page's own: JupyterLab drops ``?path=`` once it has opened the page,
  // and a reload (F5, back, forward) of what is left would open no page to run.
  const asked = window.location.href;
  const keepAddress = () => {
    if (!new URLSearchParams(window.location.search).get("path")
        && /\/lab\/(index\.html)?$/.test(window.location.pathname)) {
      window.history.replaceState(window.history.state, "", asked);
    }
  };
  setInterval(keepAddress, 250);
  // ... and it pushes each address it gives itself (without the page, with its mode) as a step
  // of its own, which Back would return to: within the page, it replaces the page's step.
  const pushState = window.history.pushState.bind(window.history);
  window.history.pushState = (state, unused, url) => {
    const next = new URL(url || window.location.href, window.location.href);
    if (next.pathname === window.location.pathname) {
      return window.history.replaceState(state, unused, url);
    }
    return pushState(state, unused, url);
  };
  window.addEventListener("pagehide", keepAddress);
  const statusSlot = document.querySelector("#emq-bar .emq-bar-status");
  if (statusSlot) statusSlot.appendChild(cue); // the cue is a line of the bar, over nothing
  const title = cue.querySelector(".emq-cue-title");
  const detail = cue.querySelector(".emq-cue-detail");
  const bar = cue.querySelector(".emq-cue-bar > span");
  const retry = cue.querySelector(".emq-cue-retry");
  retry.addEventListener("click", () => window.location.reload());
  const started = performance.now();
  let stage = { state: "loading", text: "Opening the page…", done: 0.05 };
  let timer = null;
  let early = null; // the kernel's worker, started at once (below)
  // When each stage was reached, in seconds since the page was asked for (read by the benchmark).
  const times = {};
  // ``leaving()``: a link to another page was followed (tools/site/reader.html): the page's
  // own run, unfinished, is no edit to warn about
  window.emqLab = { times, leaving: () => undefined };
  const mark = (name) => {
    if (!(name in times)) times[name] = Math.round(performance.now()) / 1000;
  };
  let ownRunStarted = false;

  /** What the cue says: a state (also on data-state, for the tests), a line and how far. */
  function show(state, text, done, note) {
    stage = { state, text, done, note: note || "" };
    cue.dataset.state = state;
    cue.hidden = false;
    cue.classList.remove("emq-cue-gone");
    title.textContent = text;
    retry.hidden = state !== "error";
    bar.style.width = `${Math.round(Math.min(1, Math.max(0, done)) * 100)}%`;
    tick();
    if (!timer) timer = setInterval(tick, 500);
  }

  function tick() {
    const seconds = Math.round((performance.now() - started) / 1000);
    const live = ["loading", "starting", "running", "restarting"].includes(stage.state);
    let note = stage.note;
    if (!note && early && !ownRunStarted
        && ["loading", "starting"].includes(stage.state)) {
      note = `${early.step}… · ${seconds} s`;
    }
    detail.textContent = note || (live ? `${seconds} s` : "");
  }

  /** Fade the cue out after ``ms``, unless something else is shown meanwhile. */
  function hideLater(ms) {
    const shown = stage;
    clearInterval(timer);
    timer = null;
    setTimeout(() => {
      if (stage === shown) cue.classList.add("emq-cue-gone");
    }, ms);
  }

  const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function until(test, every = 100) {
    for (;;) {
      const value = test();
      if (value) return value;
      await delay(every);
    }
  }

  show("loading", "Opening the page…", 0.05, "");

  // ------------------------------------------------------------------ Python starts at once
  // The kernel's worker would start only once the whole app has loaded. It is started now,
  // with the settings the site gives the kernel (#emq-early-kernel, written by the build), and
  // handed to the kernel when the kernel asks for it: Python's runtime, the lab's packages and
  // the kernel's modules load while the app does. The kernel's own start then only does what
  // needs the app (its file system, its settings, its id). Where this cannot be done (another
  // kernel build, or a cross-origin-isolated host) the kernel starts as usual.
  early = startEarly();
  if (early) show("loading", "Starting Python in your browser…", 0.05, "");

  function startEarly() {
    const settings = document.getElementById("emq-early-kernel");
    if (!settings || window.crossOriginIsolated || typeof Worker === "undefined") return null;
    const conf = JSON.parse(settings.textContent);
    const root = new URL("../", window.location.href);
    const at = (rel) => new URL(rel, root).href;
    const pyodideUrl = at(conf.pyodideUrl);
    const options = {
      baseUrl: root.href,
      pyodideUrl,
      indexUrl: pyodideUrl.slice(0, pyodideUrl.lastIndexOf("/") + 1),
      pipliteUrls: conf.pipliteUrls.map(at),
      disablePyPIFallback: conf.disablePyPIFallback,
      location: "",
      mountDrive: false,
      loadPyodideOptions: conf.loadPyodideOptions,
    };
    const href = at(conf.worker);
    const NativeWorker = window.Worker;
    let worker = null; // made by spawn(), once the site's service worker answers (controlled())
    let post = null;
    const waiting = new Map();
    let seq = 0;
    // one remote call on the kernel's worker object, in the worker's own message format
    const send = (message) => new Promise((resolve, reject) => {
      const id = `emq-early-${++seq}`;
      waiting.set(id, (data) => {
        if (data.type === "HANDLER") {
          const error = data.value && data.value.value;
          reject(new Error((error && error.message) || "the kernel's start failed"));
        } else resolve(data.value);
      });
      post({ id, ...message });
    });
    const call = (name, ...args) => send({ type: "APPLY", path: name.split("."),
      argumentList: args.map((value) => ({ type: "RAW", value })) });
    const set = (name, value) => send({ type: "SET", path: [name],
      value: { type: "RAW", value } });
    const state = { step: "Loading Python and the lab's packages", taken: false, ready: null };
    // Python starts without what the kernel only needs later (jedi, for completion: see
    // loadLater); the kernel is told it has it, so it does not install it at its start.
    const runtime = { ...options,
      loadPyodideOptions: { ...conf.loadPyodideOptions, packages: conf.startPackages } };
    state.ready = (async () => {
      await controlled();
      spawn();
      await call("initRuntime", runtime);
      mark("python_and_packages_loaded");
      state.step = "Setting up the package manager";
      await Promise.all([set("_options", options), call("initPackageManager", options)]);
      state.step = "Starting the kernel";
      mark("package_manager_ready");
      await call("initKernel", options);
      mark("kernel_modules_imported");
      state.step = "Importing the lab";
      await call("_pyodide.runPythonAsync", conf.warm);
      mark("lab_imported");
      state.step = "Almost there";
    })();
    state.ready.catch((error) => {
      console.warn("echomq lab: early start failed", error);
      state.failed = error;
    });

    // What the kernel's own start (the worker's initialize) still has to do, with its real
    // settings: set them, mount the drive, take the kernel's globals, and say it is up. The
    // package manager is set up again only if its settings differ from the early start's, and
    // the kernel's modules step runs again only if it must enter a folder of the drive: both
    // run Python, and each step's reply waits on this page, busy drawing JupyterLab meanwhile.
    const pipliteOf = (o) => JSON.stringify([o.pipliteUrls, o.disablePyPIFallback,
      (o.loadPyodideOptions || {}).packages]);
    async function handOver(real) {
      mark("kernel_asked");
      await state.ready;
      const [drive, local] = real.location.includes(":") ? real.location.split(":")
        : ["", real.location];
      const first = [set("_options", real), set("_driveName", drive), set("_localPath", local),
        call("initFilesystem", real)];
      const last = () => [call("initGlobals", real), call("_initializer.resolve")];
      const again = [];
      if (pipliteOf(real) !== pipliteOf(options)) again.push("initPackageManager");
      if (real.mountDrive && local) again.push("initKernel");
      if (!again.length) {
        // each of these ends its work before the worker reads its next message: posted at once
        await Promise.all([...first, ...last()]);
      } else {
        await Promise.all(first);
        for (const step of again) await call(step, real); // Python: awaited one by one
        await Promise.all(last());
      }
      mark("kernel_handed");
    }

    /** The kernel's worker, made once: its messages to the early start taken here, and the
     *  kernel's own start (``initialize``) turned into the hand-over. */
    function spawn() {
      if (worker) return worker;
      worker = new NativeWorker(href, { type: "module" });
      post = worker.postMessage.bind(worker);
      worker.addEventListener("message", (event) => {
        const data = event.data;
        if (data && waiting.has(data.id)) {
          event.stopImmediatePropagation();
          waiting.get(data.id)(data);
          waiting.delete(data.id);
        }
      });
      worker.postMessage = takeInitialize;
      return worker;
    }

    /** On a first visit the site's service worker (tools/site/offline.js) is registered here,
     *  before the kernel's worker starts, so that it answers that worker's files: the browser
     *  then keeps Python's compiled runtime beside the cached copy, and a reload or the next
     *  page does not compile it again. JupyterLite registers the same file later and finds it
     *  (its version noted, as JupyterLite notes it). Waits at most ``controlWaitMs``. */
    async function controlled() {
      const sw = navigator.serviceWorker;
      if (!sw || !conf.serviceWorker || sw.controller) return;
      const url = at(conf.serviceWorker);
      const change = new Promise((resolve) => {
        sw.addEventListener("controllerchange", resolve, { once: true });
      });
      try {
        localStorage.setItem(`${url}-version`, conf.appVersion);
        await sw.register(url);
      } catch (error) {
        return; // no service worker here (storage off, a private window): start as it is
      }
      await Promise.race([change, delay(conf.controlWaitMs)]);
      mark("service_worker_answers");
    }

    function takeInitialize(message, transfer) {
      const initialize = message && message.type === "APPLY" && Array.isArray(message.path)
        && message.path.length === 1 && message.path[0] === "initialize";
      if (!initialize || state.handed) return post(message, transfer);
      state.handed = true;
      const reply = (data) => worker.dispatchEvent(
        new MessageEvent("message", { data: { id: message.id, ...data } }));
      handOver(message.argumentList[0].value).then(
        () => reply({ type: "RAW", value: undefined }),
        (error) => {
          console.warn("echomq lab: early start not used", error);
          post(message, transfer); // the kernel's own start, from the beginning
        });
      return undefined;
    }

    function KernelWorker(url, opts) {
      if (!state.taken && new URL(url, window.location.href).href === href) {
        state.taken = true;
        return spawn();
      }
      return new NativeWorker(url, opts);
    }
    /** Load what Python started without, then tell the kernel it is there. */
    state.loadLater = async () => {
      await call("_pyodide.loadPackage", conf.later);
      await call("_pyodide.runPythonAsync", conf.laterLoaded);
    };

    KernelWorker.prototype = NativeWorker.prototype;
    window.Worker = KernelWorker;
    state.drop = () => {
      if (!state.taken && worker) worker.terminate();
      window.Worker = NativeWorker;
    };
    return state;
  }

  // ------------------------------------------------------------------ the reader's view
  // Opened to read (body.emq-reading, tools/site/reader.html): one document, no menus, no
  // file browser, no status bar, code folded; "Full JupyterLab" gives JupyterLab back, "Show
  // the code" unfolds the code. Both choices, and the theme's darkness, are remembered in
  // localStorage ("emq-view"); what the reader answered and where they were, per page.
  const store = {
    get(key, fallback) {
      try { return JSON.parse(localStorage.getItem(key)) || fallback; } catch (e) { return fallback; }
    },
    set(key, value) {
      try { localStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* storage off */ }
    },
  };
  const VIEW = "emq-view";
  // the reader's answers and place: echomq_lab/widgets/answers.js, loaded before this script
  const answers = window.emqAnswers || null;
  const reader = document.getElementById("emq-reader");
  const words = document.getElementById("emq-words");
  let appRef = null;
  let shownPanel = null; // the page, once JupyterLab shows it

  function remember(change) {
    store.set(VIEW, { ...store.get(VIEW, {}), ...change });
  }

  function reading() {
    return document.body.classList.contains("emq-reading");
  }

  /** The shell as the view wants it: the reader's (one document, nothing around it) or
   *  JupyterLab's own. */
  let shellParts = null;
  function arrange(app) {
    const shell = app.shell;
    const lab = !reading();
    app.commands.execute("application:set-mode",
      { mode: lab ? "multiple-document" : "single-document" });
    if (!lab) {
      shell.collapseLeft();
      shell.collapseRight();
    }
    for (const side of ["left", "right"]) {
      if (shell.isSideTabBarVisible && shell.isSideTabBarVisible(side) === !lab) {
        shell.toggleSideTabBarVisibility(side);
      }
    }
    // the menus and the status bar: hidden as the shell's own parts, so the page takes their room
    // (found once: in the full JupyterLab the menu's panel moves into the top one)
    shellParts = shellParts || [...(shell.layout.widgets || [])].filter(
      (part) => ["jp-top-panel", "jp-menu-panel", "jp-bottom-panel"].includes(part.node.id));
    for (const part of shellParts) part.setHidden(!lab);
    for (const widget of shell.widgets("main")) {
      if (widget.toolbar) widget.toolbar.setHidden(!lab);
      widget.fit();
    }
    window.dispatchEvent(new Event("resize"));
    requestAnimationFrame(() => window.dispatchEvent(new Event("resize")));
  }

  const fullLab = document.getElementById("emq-full-lab");
  const showCode = document.getElementById("emq-show-code");
  const startOver = document.getElementById("emq-start-over");
  function labels() {
    if (fullLab) fullLab.textContent = reading() ? "Full JupyterLab" : "Reader's view";
    if (showCode) {
      const shown = document.body.classList.contains("emq-code-shown");
      showCode.setAttribute("aria-pressed", String(shown));
      showCode.hidden = !reading();
    }
  }
  labels();
  if (fullLab) {
    fullLab.addEventListener("click", () => {
      const lab = reading();
      document.body.classList.toggle("emq-reading", !lab);
      document.body.classList.toggle("emq-full", lab);
      remember({ lab });
      labels();
      if (appRef) arrange(appRef);
      if (lab && shownPanel) handOverToLive(shownPanel);
    });
  }
  if (showCode) {
    showCode.addEventListener("click", () => {
      const code = !document.body.classList.contains("emq-code-shown");
      document.body.classList.toggle("emq-code-shown", code);
      remember({ code });
      labels();
    });
  }
  if (startOver) {
    startOver.addEventListener("click", () => {
      if (answers) answers.clear(path);
      window.location.reload();
    });
  }

  /** JupyterLab's theme, followed: the bar and the words take its darkness from the next
   *  opening's first paint on. */
  function followTheme() {
    const note = () => {
      const light = document.body.dataset.jpThemeLight;
      if (light === undefined) return;
      const dark = light === "false";
      document.documentElement.classList.toggle("emq-dark", dark);
      remember({ dark });
    };
    note();
    new MutationObserver(note).observe(document.body,
      { attributes: true, attributeFilter: ["data-jp-theme-light"] });
  }

  /** The cells of the words (reader/<page>.html), in page order. */
  function wordCells() {
    return words ? [...words.children].filter((el) => el.classList.contains("cell")) : [];
  }

  /** The cell at the top of the words' view, and how far its top sits below the view's. */
  function wordsPlace() {
    return answers ? answers.placeIn(reader, wordCells()) : { index: 0, offset: 0 };
  }

  // the reader's own scrolling of the words: from then on their place is where they are there
  let wordsMoved = false;
  if (reader) {
    for (const kind of ["wheel", "touchmove", "keydown", "mousedown"]) {
      reader.addEventListener(kind, () => { wordsMoved = true; }, { passive: true });
    }
  }

  /** Where the reader was, put back in the words as soon as they show. */
  function restorePlace() {
    const place = answers && answers.place(path);
    if (place && reader) until(() => answers.goTo(reader, wordCells(), place), 50);
  }
  restorePlace();

  /** The live page takes the words' place: scrolled so the cell at the top of the words is
   *  at the same height, then the words fade out. */
  let handedOver = false;
  function handOverToLive(panel) {
    if (handedOver || !reader || !reader.isConnected) return;
    handedOver = true;
    // the place kept, exactly, unless the reader moved in the words (the words' own layout
    // may still shift a few pixels as they settle)
    const kept = !wordsMoved && answers && answers.place(path);
    const { index, offset } = kept || wordsPlace();
    if (!view.scroller) view.watch(panel.content);
    const scroller = view.scroller;
    if (panel.content.widgets[index] && (index > 0 || offset < 0)) {
      // held there (not at this scroll height) while the page runs and its answers are
      // pressed again: panels drawn above the place grow the page above it
      view.anchor = { index, offset };
      view.hold();
      view.keepHolding();
    }
    reader.classList.add("emq-gone");
    reader.setAttribute("aria-busy", "false");
    mark("live_shown");
    setTimeout(() => reader.remove(), 400);
    keepPlace(panel, scroller);
  }

  /** Where the reader is, kept (per page) as they scroll the live page. */
  function keepPlace(panel, scroller) {
    const cells = () => panel.content.widgets.map((cell) => cell.node);
    if (answers) answers.keepPlace(path, scroller, cells);
  }

  /** Once a page is live: the whole site kept for offline reading (tools/site/offline.js, in
   *  the service worker JupyterLite registers). */
  function keepSite() {
    if (!navigator.serviceWorker) return;
    navigator.serviceWorker.ready.then((registration) => {
      if (registration.active) registration.active.postMessage({ type: "emq-keep-site" });
    }).catch(() => undefined);
  }

  // ------------------------------------------------------------------ the reader's answers
  if (answers) answers.record(path, showProgress);

  // ------------------------------------------------------------------ the reader's progress
  // On the hub: each page's answered checks in its table of pages, and the module's summary
  // (echomq_lab/widgets/progress.js), in the words and on the live page.
  const progress = window.emqProgress || null;
  function showProgress() {
    if (!progress || !answers) return;
    const keyOf = (file) => file; // the site keeps a page's answers under its file's name
    progress.show(words, keyOf, path);
    if (shownPanel) progress.show(shownPanel.node, keyOf, path);
  }
  if (words) until(() => words.querySelector(".cell"), 50).then(showProgress);
  window.addEventListener("storage", showProgress); // answered in another tab

  async function replayAnswers(panel) {
    if (answers) {
      await answers.replay(path, panel.node,
        () => until(() => kernelOf(panel) && kernelOf(panel).status === "idle"));
    }
    mark("answers_replayed");
  }

  /** The notebook's cell list is a feed (role="feed"): each cell in it is an article, as a
   *  feed's items must be, including cells added later. */
  function cellsAsArticles(panel) {
    const viewport = panel.content.node.querySelector("[role='feed']");
    if (!viewport) return;
    const mark = () => {
      for (const cell of viewport.children) {
        if (cell.classList.contains("jp-Cell") && !cell.getAttribute("role")) {
          cell.setAttribute("role", "article");
        }
      }
    };
    mark();
    new MutationObserver(mark).observe(viewport, { childList: true });
  }

  // ------------------------------------------------------------------ the page and its kernel

  function pagePanel(app) {
    for (const widget of app.shell.widgets("main")) {
      if (widget.context && widget.context.path === path && widget.content
          && widget.sessionContext) return widget;
    }
    return null;
  }

  function kernelOf(panel) {
    const session = panel.sessionContext.session;
    return session ? session.kernel : null;
  }

  /** Python answers: the kernel is connected and idle or busy (not starting or restarting). */
  function answering(panel) {
    const kernel = kernelOf(panel);
    return !!kernel && kernel.connectionStatus === "connected"
      && (kernel.status === "idle" || kernel.status === "busy");
  }

  function codeCells(panel) {
    return panel.content.widgets.filter((cell) => cell.model.type === "code");
  }

  // ------------------------------------------------------------------ runs pressed early are kept

  const RUNS = /^(notebook:(run|restart)|runmenu:|kernelmenu:(restart|run))/;
  const RUN_ALL = new Set(["notebook:run-all-cells", "runmenu:run-all"]);
  const kept = [];
  let original = null;
  let ownRunDone = false;
  let flushing = false;

  function keepEarlyRuns(app, panel) {
    original = app.commands.execute.bind(app.commands);
    app.commands.execute = (id, args) => {
      // a Run All before the page's own run has ended is that run (under way or to come)
      if (RUN_ALL.has(id) && !ownRunDone) return Promise.resolve(true);
      if (!RUNS.test(id) || answering(panel)) return original(id, args);
      return new Promise((resolve, reject) => {
        kept.push({ id, args, resolve, reject });
        if (ownRunStarted) show("restarting", "Python is starting again…", 0.3,
                                "what you pressed runs once it answers");
      });
    };
  }

  /** Do what was kept, in order, each once Python answers (after the page's own run). */
  async function doKept(panel) {
    if (flushing || !ownRunDone) return;
    flushing = true;
    try {
      while (kept.length) {
        await until(() => answering(panel));
        const { id, args, resolve, reject } = kept.shift();
        original(id, args).then(resolve, reject);
      }
    } finally {
      flushing = false;
    }
  }

  // ------------------------------------------------------------------ the page's own run

  /** Run the code cells from ``next`` on, one at a time, each once the one before has
   *  answered (so what the reader presses in a panel already drawn is answered after the cell
   *  running then, not after the whole page); stop at a cell that fails (an error), or at
   *  one Python dropped. Returns the index to go on from. */
  async function runCells(panel, cells, next, status) {
    const notebook = panel.content;
    // Running a cell activates the notebook, which moves the focus to the cell: during the
    // page's own run the focus stays where the reader put it (a panel's button, an input).
    notebook.activate = () => undefined;
    try {
      return await runEach(notebook, cells, next, status);
    } finally {
      delete notebook.activate;
    }
  }

  async function runEach(notebook, cells, next, status) {
    for (; next < cells.length; next++) {
      cells[next].node.classList.remove(NOT_YET);
      if (!cells[next].model.sharedModel.getSource().trim()) continue; // nothing to send
      const before = status.ran;
      notebook.activeCellIndex = notebook.widgets.indexOf(cells[next]);
      notebook.deselectAll();
      view.hold();
      await original("notebook:run-cell", { activate: false });
      view.hold();
      if (status.ran === before) return next; // dropped: tried again
      if (status.failed) return cells.length;
    }
    return next;
  }

  /** Where the reader is looking. The page's own run moves the active cell from cell to cell,
   *  and the notebook scrolls to each: the view is put back where it was (the page's top, for
   *  a page just opened) until the reader scrolls, presses a key or clicks in it. */
  const view = {
    scroller: null,
    top: 0,
    own: false,
    // the reader's place (a cell and how far its top sits below the view's), once it is known
    anchor: null,
    notebook: null,
    holding: null,
    watch(notebook) {
      this.notebook = notebook;
      this.scroller = notebook.node.querySelector(".jp-WindowedPanel-outer") || notebook.node;
      this.top = this.scroller.scrollTop;
      const mine = () => { this.own = true; };
      for (const kind of ["wheel", "touchmove", "keydown", "mousedown"]) {
        this.scroller.addEventListener(kind, mine, { passive: true });
      }
    },
    put() {
      if (!this.scroller || this.own) return;
      const cell = this.anchor && this.notebook.widgets[this.anchor.index];
      if (cell) {
        this.scroller.scrollTop += cell.node.getBoundingClientRect().top
          - this.scroller.getBoundingClientRect().top - this.anchor.offset;
      } else {
        this.scroller.scrollTop = this.top;
      }
    },
    hold() {
      this.put();
      // the notebook may scroll once more on its next frame
      requestAnimationFrame(() => this.put());
    },
    /** Hold the place as the page grows around it (until :func:`letGo`, or the reader
     *  scrolls, presses a key or clicks). */
    keepHolding() {
      if (!this.holding) this.holding = setInterval(() => this.put(), 100);
    },
    letGo() {
      clearInterval(this.holding);
    },
  };

  /** The last cell active and none selected, as Run All leaves a notebook. */
  function lastCellActive(panel) {
    panel.content.activeCellIndex = panel.content.widgets.length - 1;
    panel.content.deselectAll();
  }

  /** Run every code cell once, top to bottom; retried while Python ran none of them (a run
   *  dropped). */
  async function runPage(app, panel) {
    const cells = codeCells(panel);
    // a stored output is not shown until its cell has run: a stored panel is only its text
    for (const cell of cells) cell.node.classList.add(NOT_YET);
    const total = cells.length;
    const status = { ran: 0, failed: false };
    let next = 0;
    for (let attempt = 1; attempt <= 5; attempt++) {
      await until(() => answering(panel));
      const kernel = kernelOf(panel);
      const count = (_, msg) => {
        const type = msg.header.msg_type;
        if (type === "execute_input") {
          status.ran += 1;
          if (livePanels(panel)) {
            mark("first_panel_drawn");
            // the first panel is live: the live page takes the words' place (what has not run
            // yet keeps its room, blank, until its cell runs)
            if (reading()) handOverToLive(panel);
          }
          show("running", `Running the page: cell ${status.ran} of ${total}`,
               0.4 + 0.6 * status.ran / total,
               livePanels(panel) ? "the first panels are live" : "");
        } else if (type === "error") {
          status.failed = true;
        }
      };
      kernel.iopubMessage.connect(count);
      if (!view.scroller) view.watch(panel.content);
      lastCellActive(panel);
      view.hold();
      app.shell.activateById(panel.id);
      ownRunStarted = true;
      mark("run_started");
      show("running", "Running the page…", 0.4);
      try {
        next = await runCells(panel, cells, next, status);
      } finally {
        kernel.iopubMessage.disconnect(count);
      }
      if (next >= total) {
        for (const cell of cells) cell.node.classList.remove(NOT_YET);
        lastCellActive(panel);
        view.hold();
        return { ok: !status.failed, ran: status.ran };
      }
      await delay(500 * attempt);
    }
    return { ok: false, ran: status.ran };
  }

  /** The class of a code cell whose stored outputs wait, unseen, for its cell to run. */
  const NOT_YET = "emq-not-run-yet";

  function livePanels(panel) {
    return panel.node.querySelectorAll(
      ".jp-OutputArea-output .jupyter-widgets:not(.jupyter-widgets-error-widget)").length;
  }

  // ------------------------------------------------------------------ later restarts

  function followRestarts(panel) {
    panel.sessionContext.statusChanged.connect((_, status) => {
      if (!ownRunStarted || stage.state === "running") return;
      if (["starting", "restarting", "autorestarting", "unknown"].includes(status)) {
        show("restarting", "Python is starting again…", 0.3);
      } else if (status === "idle" && kept.length) {
        doKept(panel);
      } else if (status === "idle" && stage.state === "restarting") {
        show("ready", "Python started again. The panels wake up when the page runs again: "
             + "Run ▸ Run All Cells.", 1);
        hideLater(8000);
      }
    });
  }

  /** The page's session, and with it the kernel that takes the early worker, is started as soon
   *  as the app exists, not once JupyterLab has opened and drawn the page: the page then finds
   *  it running and connects to it. The list of running sessions the page reads first waits
   *  for this start while it does not list the page, so the page never starts a second one.
   *  The page's checkpoint is made at once too: JupyterLab makes one when it opens a page that
   *  has none, and joins the page to its kernel only after (a few tenths of a second, while the
   *  kernel was ready). */
  function startSessionAtOnce(app) {
    app.serviceManager.contents.createCheckpoint(path).catch(
      (error) => console.warn("echomq lab: JupyterLab makes the page's checkpoint", error));
    const sessions = app.serviceManager.sessions;
    const specs = app.serviceManager.kernelspecs;
    const refresh = sessions.refreshRunning.bind(sessions);
    const start = (async () => {
      await Promise.all([sessions.ready, specs.ready]);
      const name = await until(() => specs.specs && specs.specs.default, 50);
      const session = await sessions.startNew({
        path, name: path.split("/").pop(), type: "notebook", kernel: { name },
      });
      session.dispose(); // this connection only; the session and its kernel stay
    })();
    // at most a few seconds: then the page starts its session itself
    const started = Promise.race([start, delay(5000)]).catch(
      (error) => console.warn("echomq lab: the page starts its own session", error));
    // (the start itself reads the list once its session exists: that read does not wait)
    const listed = () => [...sessions.running()].some((model) => model.path === path);
    sessions.refreshRunning = async () => {
      await refresh();
      if (!listed()) {
        await started;
        await refresh();
      }
      sessions.refreshRunning = refresh;
    };
  }

  async function main() {
    const app = await until(() => window.jupyterapp, 50);
    if (early) startSessionAtOnce(app);
    await app.restored;
    appRef = app;
    arrange(app);
    followTheme();
    const panel = await until(() => pagePanel(app), 100);
    arrange(app);
    cellsAsArticles(panel);
    mark("app_shown");
    shownPanel = panel;
    // JupyterLab itself, asked for: it takes the words' place as soon as it shows the page
    if (!reading()) handOverToLive(panel);
    keepEarlyRuns(app, panel);
    followRestarts(panel);
    window.emqLab.leaving = () => {
      if (!ownRunDone) panel.context.model.dirty = false;
    };
    await panel.context.ready;
    show("starting", "Starting Python in your browser…", 0.15);
    await panel.sessionContext.ready;
    await until(() => answering(panel), 20); // the page's run waits on this: looked at often
    mark("python_answers");
    if (early) early.drop();
    // The page is what was asked for: the file browser beside it is folded away once the page
    // is up (its tab on the left opens it again).
    if (app.shell.collapseLeft) app.shell.collapseLeft();
    const { ok } = await runPage(app, panel);
    panel.context.model.dirty = false; // the page's own run is not an edit
    ownRunDone = true;
    mark("run_done");
    handOverToLive(panel);
    if (ok) {
      const seconds = Math.round((performance.now() - started) / 1000);
      show("ready", "Ready: the panels are live.", 1, `${seconds} s`);
      hideLater(2500);
    } else {
      show("error", "A cell stopped with an error: its message is on the page.", 1);
    }
    showProgress();
    await doKept(panel);
    await replayAnswers(panel);
    // held a while longer (a panel may still grow as it settles), until the reader moves
    setTimeout(() => view.letGo(), 30000);
    keepSite();
    if (early && early.taken) {
      await until(() => answering(panel) && kernelOf(panel).status === "idle");
      early.loadLater().catch((error) => console.warn("echomq lab: jedi not loaded", error));
    }
  }

  // The cue never hangs: Python that failed to start, or that has not answered after
  // STALLED_S seconds with nothing moving, ends in one plain line and a way to try again.
  const STALLED_S = 120;
  let lastMove = { key: "", at: performance.now() };
  const watchdog = setInterval(() => {
    if (!["loading", "starting"].includes(stage.state)) {
      if (stage.state !== "restarting") clearInterval(watchdog);
      return;
    }
    const key = `${stage.text}|${early ? early.step : ""}|${Object.keys(times).length}`;
    if (key !== lastMove.key) lastMove = { key, at: performance.now() };
    const stalled = performance.now() - lastMove.at > STALLED_S * 1000;
    if ((early && early.failed && !early.taken) || stalled) {
      clearInterval(watchdog);
      show("error", navigator.onLine ? "Python could not start in this tab."
        : "Python could not start: this tab is offline and the page is not stored yet.", 1);
    }
  }, 1000);

  main().catch((error) => {
    console.error("echomq lab: could not run the page", error);
    show("error", "The page could not run by itself.", 1);
  });
})();
