// The browser backend for the tests: Pyodide (the browser's Python) under Node, running
// fakeredis with its Lua on fengari (echomq_lab/browser/lua.py), served as RESP on loopback.
//
//   node tools/site/pyodide_server.mjs --port 0 --wheels DIR --repo ROOT
//
// Loads every .whl in DIR (fakeredis, redis, sortedcontainers: pure Python), puts ROOT on
// sys.path (for echomq_lab), then prints "READY <port>" and serves until killed.
//
//   node tools/site/pyodide_server.mjs --wheels DIR --repo ROOT --exec FILE
//
// Instead runs the Python FILE there (its output on stdout) and exits: 0, or 1 if it raised.
import { readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) =>
    a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs, []));
const port = Number(args.port ?? 0);
const wheels = args.wheels;
const repo = args.repo ?? join(here, "..", "..");

// fengari's browser bundle hangs itself on `window`; here that is globalThis.
const bundle = readFileSync(join(here, "node_modules/fengari-web/dist/fengari-web.js"), "utf8");
new Function("window", bundle)(globalThis);

const py = await loadPyodide({ stdout: (s) => console.log(s), stderr: (s) => console.error(s) });
for (const name of readdirSync(wheels).filter((n) => n.endsWith(".whl"))) {
  py.unpackArchive(new Uint8Array(readFileSync(join(wheels, name))), "wheel");
}
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root: repo }, "/repo");
py.runPython("import sys; sys.path.insert(0, '/repo')");
if (args.exec) {
  try {
    py.runPython(readFileSync(args.exec, "utf8"));
    process.exit(0);
  } catch (error) {
    console.error(String(error));
    process.exit(1);
  }
}
py.runPython(readFileSync(join(here, "resp_feed.py"), "utf8"));
const feed = py.globals.get("feed");
const openClient = py.globals.get("open_client");
const closeClient = py.globals.get("close");

const server = createServer((sock) => {
  const id = openClient();
  sock.setNoDelay(true);
  sock.on("data", (chunk) => {
    const out = feed(id, new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    if (out.length) sock.write(out);
  });
  sock.on("close", () => closeClient(id));
  sock.on("error", () => {});
});
server.listen(port, "127.0.0.1", () => {
  console.log(`READY ${server.address().port}`);
});
