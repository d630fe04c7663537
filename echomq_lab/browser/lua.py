"""The part of ``lupa`` that fakeredis uses, over fengari (a Lua VM in JavaScript), for Pyodide.

:func:`install` puts this module in ``sys.modules`` as ``lupa`` and ``lupa.lua51`` (the core's
:mod:`echomq_lab.connection` calls it in the browser, before fakeredis is imported; importing
this module does nothing else). No Python
exception crosses the JavaScript bridge: a Python function called from Lua answers ``false,
message``, a Lua wrapper raises it, and the original exception is raised again once Lua has
unwound. Numbers cross as floats (fengari's integers are 32-bit; Valkey's Lua 5.1 has doubles).
What still differs from 5.1 is pinned by tests/test_browser_backend.py.

A script cannot break the state: tables are read raw from Python (as Valkey reads a script's
reply, so no metamethod runs), and an error value is turned into text inside a protected call.
Should fengari still panic (its unprotected-error handler throws into JavaScript), the runtime
is marked :attr:`LuaRuntime.broken`, the call raises :class:`LuaError`, and the server built on
it makes a fresh Lua state for its next script (:func:`install` teaches fakeredis to).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any

#: Where the site build puts fengari's browser bundle, beside this module.
BUNDLE = Path(__file__).with_name("fengari-web.js")
#: Lua run once per state: what makes fengari's 5.3 answer as Valkey's 5.1 for our scripts.
_PRELUDE = Path(__file__).with_name("prelude.lua").read_bytes()
#: Turns a bridge function (answering ``true, value...`` or ``false, message``) into a Lua
#: function that raises the message on the Lua side.
_WRAP = b"""
local raw = ...
local function check(ok, ...)
  if ok then return ... end
  error((...), 0)
end
return function(...) return check(raw(...)) end
"""
#: An error value as text, never raising (a ``__tostring`` that fails included).
_DESCRIBE = b"""
local tostring, type, pcall = tostring, type, pcall
return function(value)
  if type(value) == 'string' then return value end
  local ok, text = pcall(tostring, value)
  if ok and type(text) == 'string' then return text end
  return '(error object is a ' .. type(value) .. ' value)'
end
"""
#: A table's keys in one string, ``<length>:<bytes>`` each, as a raw ``next`` walk gives them;
#: nil if a key is not a string. fakeredis lists the globals' keys around every ``redis.call``:
#: one crossing instead of one per key. Its locals are captured once, so no script can change it.
_STRING_KEYS = b"""
local next, type, concat = next, type, table.concat
return function(t)
  local parts, n = {}, 0
  for key in next, t do
    if type(key) ~= 'string' then return nil end
    n = n + 1
    parts[n] = #key .. ':' .. key
  end
  return concat(parts)
end
"""

# Lua type tags (lua.h), as lua_type names them, and fengari's registry slot of the globals.
_TYPE_NAMES = ("nil", "boolean", "userdata", "number", "string", "table", "function",
               "userdata", "thread")
_RIDX_GLOBALS = 2
_MULTRET = -1
#: How many compiled script texts a runtime keeps (:meth:`LuaRuntime._push_chunk`).
_CHUNKS_KEPT = 64
#: fengari's integers are 32-bit: a Python int outside goes to Lua as a double.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class LuaError(Exception):
    """An error raised in Lua, or a chunk that does not compile."""


_Method = Callable[..., Any]


def _guarded(method: _Method) -> _Method:
    """``method`` of a runtime (or of a value it holds), with a panic of fengari's (a JavaScript
    error out of its API) marking the runtime broken and raised as LuaError."""

    @wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        runtime = self if isinstance(self, LuaRuntime) else self._runtime
        if runtime.broken:
            raise LuaError("this Lua state was lost to an earlier script; a new one is needed")
        try:
            return method(self, *args, **kwargs)
        except (LuaError, KeyboardInterrupt):
            raise
        except Exception as exc:
            if type(exc).__name__ != "JsException":
                raise
            runtime.broken = True
            raise LuaError(f"the Lua state was lost: {exc}") from None

    return guarded


def _fengari() -> Any:
    """fengari's API object: ``globalThis.fengari`` if set, else the bundle beside this file."""
    import js  # type: ignore[import-not-found]
    from pyodide.code import run_js  # type: ignore[import-not-found]

    if not getattr(js.globalThis, "fengari", None):
        source = BUNDLE.read_text(encoding="utf-8")
        # The UMD bundle hangs itself on `window`; a worker or Node has only globalThis.
        run_js(f"(function(window){{\n{source}\n}})(globalThis);")
    return js.globalThis.fengari


def _to_bytes(value: Any) -> bytes:
    """A Lua string (a JS Uint8Array) as bytes."""
    return bytes(value.to_bytes())


class LuaRuntime:
    """One Lua state; strings cross as bytes (fakeredis asks for ``encoding=None``)."""

    def __init__(self, **_options: Any) -> None:
        from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]

        self._create_proxy = create_proxy
        self._to_js = to_js
        f = _fengari()
        self._lua, self._aux = f.lua, f.lauxlib
        self._L = f.lauxlib.luaL_newstate()
        f.lualib.luaL_openlibs(self._L)
        self._registry = f.lua.LUA_REGISTRYINDEX
        self._objects: dict[int, Any] = {}  # Python values Lua holds, by handle
        self._handles: dict[int, int] = {}  # id(value) -> handle
        self._pending: BaseException | None = None
        self._proxies: list[Any] = []
        self._chunks: dict[bytes, int] = {}  # code -> its compiled chunk (registry reference)
        #: True once fengari panicked: nothing more runs on this state.
        self.broken = False
        self._load(_PRELUDE, b"=prelude")
        self._call(0, 0)
        self._load(_WRAP, b"=wrap")
        self._wrap_ref = self._pop_ref(self._L)
        self._describe_ref = self._chunk_ref(_DESCRIBE, b"=describe")
        self._string_keys_ref = self._chunk_ref(_STRING_KEYS, b"=keys")

    def _chunk_ref(self, code: bytes, name: bytes) -> int:
        """Run ``code`` (which returns one function) and keep that function in the registry."""
        self._load(code, name)
        self._call(0, 1)
        return self._pop_ref(self._L)

    # --- the stack -------------------------------------------------------------------------

    def _load(self, code: bytes, name: bytes = b"<python>") -> None:
        """Compile ``code`` onto the stack, or raise LuaError."""
        status = self._aux.luaL_loadbufferx(self._L, self._to_js(code), len(code),
                                            name.decode(), "t")
        if status != 0:
            raise LuaError(self._pop_message())

    def _pop_message(self) -> str:
        """Pop the error value on top of the stack as text (any value: a table whose
        ``__tostring`` fails too, described in a protected call)."""
        L, lua = self._L, self._lua
        if _TYPE_NAMES[lua.lua_type(L, -1)] not in ("string", "number"):
            lua.lua_rawgeti(L, self._registry, self._describe_ref)
            lua.lua_insert(L, -2)
            lua.lua_pcall(L, 1, 1, 0)  # answers a string, or (out of memory) an error string
        text = _to_bytes(lua.lua_tolstring(L, -1)).decode("utf-8", "replace")
        lua.lua_pop(L, 1)
        return text

    def _call(self, nargs: int, nresults: int) -> None:
        """Call the function below ``nargs`` arguments; re-raise a Python error it hit."""
        self._pending = None
        if self._lua.lua_pcall(self._L, nargs, nresults, 0) != 0:
            message = self._pop_message()
            pending, self._pending = self._pending, None
            if pending is not None and message == str(pending):
                raise pending
            raise LuaError(message)

    def _run(self, base: int, args: tuple[Any, ...]) -> Any:
        """Call the function above ``base`` with ``args``: None, one result or a tuple of them."""
        for arg in args:
            self._push(self._L, arg)
        self._call(len(args), _MULTRET)
        top = self._lua.lua_gettop(self._L)
        values = [self._to_py(self._L, i) for i in range(base + 1, top + 1)]
        self._lua.lua_settop(self._L, base)
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def _pop_ref(self, L: Any) -> int:
        """Pop the top of ``L`` into a registry reference."""
        return int(self._aux.luaL_ref(L, self._registry))

    def _to_py(self, L: Any, index: int) -> Any:
        """The Lua value at ``index`` as Python (as lupa's 5.1 runtime gives it)."""
        kind = _TYPE_NAMES[self._lua.lua_type(L, index)]
        if kind == "nil":
            return None
        if kind == "boolean":
            return bool(self._lua.lua_toboolean(L, index))
        if kind == "number":
            number = float(self._lua.lua_tonumber(L, index))
            return int(number) if number.is_integer() and abs(number) < 2**63 else number
        if kind == "string":
            return _to_bytes(self._lua.lua_tolstring(L, index))
        if self._lua.lua_islightuserdata(L, index):
            return self._objects.get(int(self._lua.lua_touserdata(L, index)))
        self._lua.lua_pushvalue(L, index)
        held = {"table": _LuaTable, "function": _LuaFunction}.get(kind, _LuaObject)
        return held(self, self._pop_ref(L), kind)

    def _push(self, L: Any, value: Any) -> None:
        """Push ``value`` onto ``L`` (tables and functions of this runtime as themselves)."""
        lua = self._lua
        if value is None:
            lua.lua_pushnil(L)
        elif isinstance(value, bool):
            lua.lua_pushboolean(L, value)
        elif isinstance(value, int) and _INT_MIN <= value <= _INT_MAX:
            lua.lua_pushinteger(L, value)
        elif isinstance(value, (int, float)):
            lua.lua_pushnumber(L, float(value))
        elif isinstance(value, str):
            self._push(L, value.encode("utf-8"))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            lua.lua_pushlstring(L, self._to_js(data), len(data))
        elif isinstance(value, _LuaObject) and value._runtime is self:
            lua.lua_rawgeti(L, self._registry, value._ref)
        elif callable(value):
            self._push_function(L, value)
        else:  # the same handle each time, so Lua can compare it (cjson.null)
            handle = self._handles.setdefault(id(value), len(self._handles) + 1)
            self._objects[handle] = value
            lua.lua_pushlightuserdata(L, handle)

    def _push_function(self, L: Any, func: Callable[..., Any]) -> None:
        """Push a Lua function that calls ``func`` (its errors raised on the Lua side)."""

        def bridge(state: Any) -> int:
            try:
                top = int(self._lua.lua_gettop(state))
                result = func(*[self._to_py(state, i) for i in range(1, top + 1)])
            except BaseException as exc:  # noqa: BLE001 - nothing may cross into JS
                self._pending = exc
                self._lua.lua_pushboolean(state, False)
                self._push(state, str(exc))
                return 2
            self._lua.lua_pushboolean(state, True)
            results = result if isinstance(result, tuple) else (result,)
            for item in results:
                self._push(state, item)
            return 1 + len(results)

        proxy = self._create_proxy(bridge)
        self._proxies.append(proxy)
        self._lua.lua_rawgeti(L, self._registry, self._wrap_ref)
        self._lua.lua_pushcfunction(L, proxy)
        self._lua.lua_call(L, 1, 1)

    # --- lupa's API ------------------------------------------------------------------------

    @_guarded
    def execute(self, code: bytes | str, *args: Any) -> Any:
        """Run a chunk with ``args`` (its ``...``); what it returns, as :meth:`_run`."""
        if isinstance(code, str):
            code = code.encode("utf-8")
        base = self._lua.lua_gettop(self._L)
        self._push_chunk(code)
        return self._run(base, args)

    def _push_chunk(self, code: bytes) -> None:
        """Push ``code`` compiled: once per text (fakeredis runs each script's text again at
        each EVALSHA), the last :data:`_CHUNKS_KEPT` texts kept. A main chunk keeps no state
        between calls (its locals are made afresh), so running it again is compiling it again."""
        ref = self._chunks.pop(code, None)
        if ref is None:
            self._load(code)
            ref = self._pop_ref(self._L)
            if len(self._chunks) >= _CHUNKS_KEPT:
                oldest = next(iter(self._chunks))
                self._aux.luaL_unref(self._L, self._registry, self._chunks.pop(oldest))
        self._chunks[code] = ref  # last used last
        self._lua.lua_rawgeti(self._L, self._registry, ref)

    def eval(self, code: bytes | str, *args: Any) -> Any:
        """The value of a Lua expression."""
        if isinstance(code, str):
            code = code.encode("utf-8")
        return self.execute(b"return " + code, *args)

    @_guarded
    def globals(self) -> _LuaTable:
        """The table of globals."""
        self._lua.lua_rawgeti(self._L, self._registry, _RIDX_GLOBALS)
        return _LuaTable(self, self._pop_ref(self._L), "table")

    @_guarded
    def table_from(self, source: Any, recursive: bool = False) -> _LuaTable:
        """A new table holding a list's items (from 1) or a dict's (by key); with ``recursive``,
        nested lists and dicts become tables too."""
        self._lua.lua_createtable(self._L, 0, 0)
        pairs = source.items() if isinstance(source, dict) else enumerate(source, 1)
        for key, value in pairs:
            for item in (key, value):
                if recursive and isinstance(item, (dict, list, tuple)):
                    item = self.table_from(item, recursive=True)
                self._push(self._L, item)
            self._lua.lua_rawset(self._L, -3)
        return _LuaTable(self, self._pop_ref(self._L), "table")

    def require(self, name: bytes | str) -> Any:
        """``require(name)`` in Lua."""
        return self.globals()[b"require"](name)


class _LuaObject:
    """A Lua value of ``kind`` held from Python by a registry reference (released when dropped)."""

    def __init__(self, runtime: LuaRuntime, ref: int, kind: str) -> None:
        self._runtime = runtime
        self._ref = ref
        self._kind = kind

    def __del__(self) -> None:
        try:
            self._runtime._aux.luaL_unref(self._runtime._L, self._runtime._registry, self._ref)
        except Exception:  # noqa: BLE001 - interpreter shutting down
            pass


class _LuaTable(_LuaObject):
    """A Lua table: ``t[k]``, ``t[k] = v`` (None deletes), ``keys()``, ``values()``, ``items()``.

    Read and written raw: no metamethod runs from Python (Valkey reads a script's reply raw
    too), so nothing a script sets on its table can raise outside a protected call."""

    @_guarded
    def __getitem__(self, key: Any) -> Any:
        if key is None or (isinstance(key, float) and key != key):
            return None  # no such key in any table (and Lua refuses to look one up)
        rt, L = self._runtime, self._runtime._L
        rt._push(L, self)
        rt._push(L, key)
        rt._lua.lua_rawget(L, -2)
        value = rt._to_py(L, -1)
        rt._lua.lua_settop(L, -3)
        return value

    @_guarded
    def __setitem__(self, key: Any, value: Any) -> None:
        if key is None or (isinstance(key, float) and key != key):
            raise LuaError("table index is nil or NaN")
        rt, L = self._runtime, self._runtime._L
        rt._push(L, self)
        rt._push(L, key)
        rt._push(L, value)
        rt._lua.lua_rawset(L, -3)
        rt._lua.lua_settop(L, -2)

    @_guarded
    def items(self, values: bool = True) -> list[tuple[Any, Any]]:
        """Every key and value (None unless ``values``): 1, 2, ... first and in order, as C Lua
        walks its array part (fengari does not), then the other keys as ``next`` gives them."""
        rt, L = self._runtime, self._runtime._L
        rt._push(L, self)
        pairs = []
        rt._lua.lua_pushnil(L)
        while rt._lua.lua_next(L, -2) != 0:
            pairs.append((rt._to_py(L, -2), rt._to_py(L, -1) if values else None))
            rt._lua.lua_settop(L, -2)
        rt._lua.lua_settop(L, -2)
        keys = {key for key, _ in pairs if type(key) is int}
        run = 0
        while run + 1 in keys:
            run += 1

        def place(pair: tuple[Any, Any]) -> int:
            key = pair[0]
            return int(key) if type(key) is int and 1 <= key <= run else run + 1

        return sorted(pairs, key=place)  # stable: the other keys keep their order

    @_guarded
    def keys(self) -> list[Any]:
        """Every key, in the order of :meth:`items`."""
        packed = self._string_keys()
        if packed is None:
            return [key for key, _ in self.items(values=False)]
        return _unpack_keys(packed)

    def _string_keys(self) -> bytes | None:
        """The keys packed by the ``_STRING_KEYS`` walk, or None if one is not a string."""
        rt, L = self._runtime, self._runtime._L
        rt._lua.lua_rawgeti(L, rt._registry, rt._string_keys_ref)
        rt._push(L, self)
        rt._call(1, 1)
        packed = None if rt._lua.lua_isnil(L, -1) else _to_bytes(rt._lua.lua_tolstring(L, -1))
        rt._lua.lua_settop(L, -2)
        return packed

    def values(self) -> list[Any]:
        return [value for _, value in self.items()]


def _unpack_keys(packed: bytes) -> list[bytes]:
    """The keys of a ``<length>:<bytes>`` run, in order."""
    keys, at = [], 0
    while at < len(packed):
        colon = packed.index(b":", at)
        start = colon + 1
        end = start + int(packed[at:colon])
        keys.append(packed[start:end])
        at = end
    return keys


class _LuaFunction(_LuaObject):
    """A Lua function: calling it runs it (Python errors inside re-raised, Lua ones as LuaError)."""

    @_guarded
    def __call__(self, *args: Any) -> Any:
        rt = self._runtime
        base = rt._lua.lua_gettop(rt._L)
        rt._push(rt._L, self)
        return rt._run(base, args)


def lua_type(value: Any) -> str | None:
    """'table', 'function', ... for a Lua value; None for a Python one."""
    return value._kind if isinstance(value, _LuaObject) else None


@contextmanager
def allow_lua_module_loading() -> Iterator[None]:
    """lupa's guard around importing ``lupa.lua51``: nothing to guard here."""
    yield


def _fresh_state_after_a_panic() -> None:
    """Have fakeredis build a new Lua state (with its ``redis`` and ``cjson``) for a server whose
    state a script broke (:attr:`LuaRuntime.broken`), before its next script."""
    from fakeredis.commands_mixins import scripting_mixin

    mixin = scripting_mixin.ScriptingCommandsMixin
    original = mixin._get_server_runtime
    if getattr(original, "_fresh_after_panic", False):
        return

    def _get_server_runtime(self: Any, server: Any) -> Any:
        if getattr(getattr(server, "_lua_runtime", None), "broken", False):
            del server._lua_runtime
        return original(self, server)

    _get_server_runtime._fresh_after_panic = True  # type: ignore[attr-defined]
    setattr(mixin, "_get_server_runtime", _get_server_runtime)  # noqa: B010


def install() -> None:
    """Make ``import lupa`` and ``lupa.lua51`` give this module (before fakeredis is imported),
    and fakeredis start a new Lua state after a script broke one."""
    if getattr(sys.modules.get("lupa"), "LuaRuntime", None) is LuaRuntime:
        return
    module = sys.modules[__name__]
    package = types.ModuleType("lupa")
    for name in ("LuaRuntime", "LuaError", "lua_type", "allow_lua_module_loading"):
        setattr(package, name, getattr(module, name))
    package.lua51 = module  # type: ignore[attr-defined]
    package.__path__ = []  # a package, so importlib finds lupa.lua51 in sys.modules
    sys.modules["lupa"] = package
    sys.modules["lupa.lua51"] = module
    _fresh_state_after_a_panic()

