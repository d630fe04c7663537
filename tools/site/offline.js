// The site, kept for reading offline: put before JupyterLite's own service worker
// (site/service-worker.js, which JupyterLite registers from every page it opens) by
// tools/site/build.py, with the build's file list and version.
//
// Every request of the site's own origin (but the kernel's drive and stdin, which JupyterLite's
// part below answers) is answered here: the pages (any lab/index.html?path=…) and the notebooks
// from the network when it answers and from the cache when it does not; every other file from
// the cache first (each file's address changes with the build, or the build's version does).
// Once a page is live, it asks for the whole site to be kept ("emq-keep-site"), so that every
// page opens offline afterwards, not only the one read. Nothing is asked of any other origin.
const EMQ_VERSION = "__EMQ_VERSION__";
const EMQ_FILES = __EMQ_FILES__;
const EMQ_CACHE = `emq-site-${EMQ_VERSION}`;
const EMQ_FRESH = /(\/|\.html|\.json|\.ipynb)$/;
// Compiled by the browser (Python's runtime): answered from the cache even the first time,
// because the browser keeps what it compiled only beside a copy the cache answered, not beside
// a copy fetched through here; a reload then compiles nothing already compiled.
const EMQ_COMPILED = /\.wasm$/;

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys().then((keys) => Promise.all(keys
    .filter((key) => key.startsWith("emq-site-") && key !== EMQ_CACHE)
    .map((key) => caches.delete(key)))));
});

self.addEventListener("message", (event) => {
  if (event.data && event.data.type === "emq-keep-site") event.waitUntil(emqKeepAll());
});

async function emqKeepAll() {
  const cache = await caches.open(EMQ_CACHE);
  for (const file of EMQ_FILES) {
    const url = new URL(file, self.registration.scope).href;
    if (await cache.match(url)) continue;
    try {
      const response = await fetch(url);
      if (response.ok) await cache.put(url, response);
    } catch (error) {
      return; // offline again: the rest next time
    }
  }
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  const url = new URL(request.url);
  if (request.method !== "GET" || url.origin !== self.location.origin) return;
  if (url.pathname.includes("/api/drive") || url.pathname.includes("/api/stdin/")
      || url.pathname.endsWith("/api/service-worker-heartbeat")) return;
  event.stopImmediatePropagation(); // JupyterLite's own fetch handler below would answer too
  event.respondWith(emqAnswer(event, request, url));
});

async function emqAnswer(event, request, url) {
  const cache = await caches.open(EMQ_CACHE);
  // a page is one file, whatever its ?path= says
  const key = request.mode === "navigate" ? url.origin + url.pathname : request.url;
  if (request.mode === "navigate" || EMQ_FRESH.test(url.pathname)) {
    try {
      const response = await fetch(request);
      if (response.ok) event.waitUntil(cache.put(key, response.clone()));
      return response;
    } catch (error) {
      return emqKept(cache, key, error);
    }
  }
  const kept = await cache.match(key);
  if (kept) return kept;
  try {
    const response = await fetch(request);
    if (response.ok && response.type === "basic") {
      if (EMQ_COMPILED.test(url.pathname)) {
        await cache.put(key, response);
        return (await cache.match(key)) || fetch(request);
      }
      event.waitUntil(cache.put(key, response.clone()));
    }
    return response;
  } catch (error) {
    return emqKept(cache, key, error);
  }
}

/** Offline: the kept copy (kept under its address, or without its query), or the error. */
async function emqKept(cache, key, error) {
  const kept = (await cache.match(key)) || (await cache.match(key, { ignoreSearch: true }));
  if (kept) return kept;
  throw error;
}

