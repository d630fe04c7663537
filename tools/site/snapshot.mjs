// `node tools/site/snapshot.mjs <site>/static/pyodide '<settings JSON>'`: Python's memory
// snapshot for the site (run by tools/site/build.py once the runtime and the wheels are there).
//
// Starts the site's own Pyodide in Node with `_makeSnapshot`, loads the packages the settings
// name, runs their `imports` (Python), and writes beside the runtime the three files
// tools/site/python_start.mjs restores from (the memory and the file pack gzipped). Prints
// what it made; exits 1 with one line if it cannot.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { pathToFileURL } from "node:url";

const [where, settingsJson] = process.argv.slice(2);
const { packages, imports } = JSON.parse(settingsJson);
const dir = path.resolve(where);
const at = (name) => pathToFileURL(path.join(dir, name)).href;

try {
  const { loadPyodide } = await import(at("pyodide.mjs"));
  const { makeSnapshot, packFiles, SNAPSHOT, FILES, RECORD } = await import(at("emq-python.mjs"));
  const started = performance.now();
  const pyodide = await loadPyodide({
    indexURL: `${dir}/`, packages, _makeSnapshot: true, env: { HOME: "/home/pyodide" },
    stdout: () => undefined, stderr: (line) => console.error(`[python] ${line}`),
  });
  await pyodide.runPythonAsync(imports);
  const modules = pyodide.runPython("import sys\nlen(sys.modules)");
  const { memory, loadedPackages } = makeSnapshot(pyodide);
  const files = packFiles(pyodide.FS, pyodide._api.sitepackages);
  fs.writeFileSync(path.join(dir, SNAPSHOT), zlib.gzipSync(memory, { level: 9 }));
  fs.writeFileSync(path.join(dir, FILES), zlib.gzipSync(files, { level: 9 }));
  fs.writeFileSync(path.join(dir, RECORD), JSON.stringify({ packages, loadedPackages }));
  const mb = (name) => (fs.statSync(path.join(dir, name)).size / 1e6).toFixed(1);
  console.log(`snapshot: ${modules} modules imported; memory ${(memory.length / 1e6).toFixed(1)} MB`
    + ` (${mb(SNAPSHOT)} MB gzipped), files ${(files.length / 1e6).toFixed(1)} MB`
    + ` (${mb(FILES)} MB gzipped), in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);
} catch (error) {
  console.error(`snapshot: not made: ${(error && error.message) || error}`.split("\n")[0]);
  process.exit(1);
}
