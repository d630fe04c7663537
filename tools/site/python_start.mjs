// Python in the tab, started from a memory snapshot when the site carries one.
//
// Served beside Pyodide as static/pyodide/emq-python.mjs (tools/site/build.py), and named as the
// kernel's pyodideUrl: the kernel's worker imports it and calls its loadPyodide as it would
// Pyodide's own. `make site` starts Python once in Node (tools/site/snapshot.mjs), loads the
// kernel's and the lab's packages, imports them, and keeps three files beside this one:
//
//   emq-snapshot.bin.gz   Python's memory with every module imported (Pyodide's snapshot)
//   emq-files.bin.gz      site-packages as files (a snapshot holds memory, not the file system)
//   emq-snapshot.json     the build it was made on, and Pyodide's record of loaded packages
//
// loadPyodide here restores that memory instead of starting Python, loading the packages and
// importing them; writes the files back; puts the record of loaded packages back (or the
// kernel would install them again); and seeds `random` afresh (a restored state has one seed).
// Anything amiss (no snapshot, another Pyodide build, a restore that fails) and Python starts
// as Pyodide starts it, with the packages asked for. Pyodide's snapshot calls are its own
// experimental ones (`_makeSnapshot`, `makeMemorySnapshot`, `_loadSnapshot`): what they need
// around them in this version is said where it is done.
import { loadPyodide as startPlain } from "./pyodide.mjs";

export const SNAPSHOT = "emq-snapshot.bin.gz";
export const FILES = "emq-files.bin.gz";
export const RECORD = "emq-snapshot.json";
/** Where Pyodide keeps the object behind `loadedPackages` (it must be empty in a snapshot). */
const LOADED_SLOT = 6;

/** Pyodide's API object, as Pyodide's own loadPyodide gives it; its ``emqStartedFrom`` says
 *  how Python started ("snapshot" or "start"), for the page's timings. */
export async function loadPyodide(options) {
  const here = new URL(".", import.meta.url).href;
  let pyodide;
  try {
    pyodide = await restore(here, options);
    pyodide.emqStartedFrom = "snapshot";
  } catch (error) {
    if (error && error.name !== "NoSnapshot") {
      console.warn("echomq lab: Python's snapshot not used:", error);
    }
    pyodide = await startPlain(options);
    pyodide.emqStartedFrom = "start";
  }
  return pyodide;
}

async function restore(here, options) {
  const record = await fetch(new URL(RECORD, here)).then((r) => (r.ok ? r.json() : null))
    .catch(() => null);
  if (!record) throw Object.assign(new Error("no snapshot"), { name: "NoSnapshot" });
  const [memory, files] = await Promise.all([gunzip(new URL(SNAPSHOT, here)),
    gunzip(new URL(FILES, here))]);
  const asm = (await import(new URL("pyodide.asm.mjs", here).href)).default;
  let module = null;
  const { packages, ...rest } = options; // already loaded and imported in the snapshot
  const pyodide = await startPlain({
    ...rest,
    _loadSnapshot: memory,
    _snapshotDeserializer: deserializer(() => module),
    // The heap starts smaller than the snapshot: grown first, or the restore writes past its
    // end (pyodide #6254).
    createPyodideModule: async (settings) => {
      module = await asm(settings);
      if (module.HEAP8.length < memory.length) module._free(module._malloc(memory.length));
      return module;
    },
  });
  unpackFiles(pyodide.FS, files);
  Object.assign(pyodide.loadedPackages, record.loadedPackages);
  pyodide.runPython("import random\nrandom.seed()\ndel random");
  return pyodide;
}

/** The bytes of a gzipped file, inflated. */
async function gunzip(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  const inflated = response.body.pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(inflated).arrayBuffer());
}

// ------------------------------------------------------------------ making one (tools/site/snapshot.mjs)

/** Python's memory now, as a snapshot (Pyodide started with `_makeSnapshot: true`). */
export function makeSnapshot(pyodide) {
  pyodide.runPython("import gc\ngc.collect()\ndel gc");
  // Pyodide refuses to snapshot while its record of loaded packages holds anything: emptied
  // for the snapshot, then put back (and kept in the record file, see restore()).
  const loaded = pyodide._module.__hiwire_get(LOADED_SLOT);
  if (loaded !== pyodide.loadedPackages) throw new Error("Pyodide keeps its packages elsewhere");
  const kept = { ...loaded };
  for (const name of Object.keys(loaded)) delete loaded[name];
  try {
    return { memory: pyodide.makeMemorySnapshot({ serializer: serializer(pyodide) }),
      loadedPackages: kept };
  } finally {
    Object.assign(loaded, kept);
  }
}

/** Every file under `root`, in one buffer: a 4-byte length, a JSON list of [path, size],
 *  then the files' bytes one after the other. */
export function packFiles(FS, root) {
  const entries = [];
  const chunks = [];
  const walk = (dir) => {
    for (const name of FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const path = `${dir}/${name}`;
      if (FS.isDir(FS.stat(path).mode)) walk(path);
      else {
        const bytes = FS.readFile(path);
        entries.push([path, bytes.length]);
        chunks.push(bytes);
      }
    }
  };
  walk(root);
  const head = new TextEncoder().encode(JSON.stringify(entries));
  const out = new Uint8Array(4 + head.length + chunks.reduce((n, c) => n + c.length, 0));
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  let at = 4 + head.length;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** The files of packFiles() written back. */
export function unpackFiles(FS, blob) {
  const size = new DataView(blob.buffer, blob.byteOffset).getUint32(0);
  const entries = JSON.parse(new TextDecoder().decode(blob.subarray(4, 4 + size)));
  let at = 4 + size;
  for (const [path, length] of entries) {
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, blob.subarray(at, at + length));
    at += length;
  }
}

// A JavaScript object that Python holds at the snapshot is written as the path that finds it
// again from a few roots (the global object, Pyodide's API and its internal API), one or two
// steps down, or as a global function of the same name and text; at the restore the path is
// followed in the new runtime.
const rootsOf = (api) => ({ g: globalThis, api: api.public_api, API: api });

function serializer(pyodide) {
  const roots = rootsOf(pyodide._api);
  roots.api = pyodide;
  const props = (obj) => {
    try { return Object.getOwnPropertyNames(obj); } catch (error) { return []; }
  };
  const get = (obj, key) => {
    try { return obj[key]; } catch (error) { return undefined; }
  };
  return (obj) => {
    for (const [name, root] of Object.entries(roots)) {
      if (obj === root) return [name];
      for (const key of props(root)) if (get(root, key) === obj) return [name, key];
    }
    for (const [name, root] of Object.entries(roots)) {
      for (const key of props(root)) {
        const value = get(root, key);
        if (!value || (typeof value !== "object" && typeof value !== "function")) continue;
        for (const inner of props(value)) if (get(value, inner) === obj) return [name, key, inner];
      }
    }
    if (typeof obj === "function" && obj.name && typeof globalThis[obj.name] === "function"
        && String(globalThis[obj.name]) === String(obj)) return ["g", obj.name];
    throw new Error(`a JavaScript object Python holds cannot be named: ${String(obj).slice(0, 80)}`);
  };
}

function deserializer(moduleOf) {
  return (path) => {
    const roots = rootsOf(moduleOf().API);
    return path.slice(1).reduce((obj, key) => obj[key], roots[path[0]]);
  };
}
