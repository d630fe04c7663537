// Byte-compile pure-Python wheels for the browser's Python, as Pyodide's own wheels are:
// each module's .py is replaced by its .pyc (Python 3.14's, compiled by Pyodide itself), so
// the tab imports without compiling. A file that does not compile keeps its source.
//
//   node tools/site/compile_wheels.mjs WHEEL...   (each rewritten in place)
import { readFileSync, writeFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const py = await loadPyodide();
py.runPython(`
import importlib.util, io, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc

def compile_wheel(data):
    data = bytes(data.to_py())
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            raw = src.read(info)
            name = info.filename
            if name.endswith(".py") and ".dist-info/" not in name:
                try:
                    code = compile(raw, name, "exec", dont_inherit=True)
                except SyntaxError:
                    dst.writestr(info, raw)
                    continue
                pyc = _code_to_hash_pyc(code, importlib.util.source_hash(raw), checked=False)
                dst.writestr(zipfile.ZipInfo(name + "c", info.date_time), pyc,
                             compress_type=zipfile.ZIP_DEFLATED)
            else:
                dst.writestr(info, raw)
    return out.getvalue()
`);
const compileWheel = py.globals.get("compile_wheel");
for (const path of process.argv.slice(2)) {
  const out = compileWheel(new Uint8Array(readFileSync(path)));
  writeFileSync(path, out.toJs());
  out.destroy();
}
