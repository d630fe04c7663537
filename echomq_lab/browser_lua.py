"""The part of ``lupa`` that fakeredis uses, over fengari (a Lua VM in JavaScript), for Pyodide.

lupa has no WebAssembly build, so in the browser fakeredis would answer "unknown command" to
EVAL. :func:`install` puts this module in ``sys.modules`` as ``lupa`` and ``lupa.lua51`` before
fakeredis is imported. No Python exception is thrown across the JavaScript bridge: a Python
function called from Lua answers ``false, message``, a Lua wrapper raises it, and the original
exception is raised again once Lua has unwound. Numbers cross as floats: fengari's integers are
32-bit and wrap, where Valkey's Lua 5.1 has doubles only. What still differs from 5.1 (``..`` of
an integral float gives ``2.0``; ``//`` and bitwise operators parse) the scripts keep clear of
(README, "No install"; tests/test_browser_backend.py).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: Where the site build puts fengari's browser bundle, beside this module.
BUNDLE = Path(__file__).with_name("fengari-web.js")
#: Lua run once per state: what makes fengari's 5.3 answer as Valkey's 5.1 for our scripts.
_PRELUDE = Path(__file__).with_name("browser_prelude.lua").read_bytes()
#: Turns a raw bridge function (answering ``true, value...`` or ``false, message``) into a Lua
#: function that raises the message: the error is raised on the Lua side, never in JS.
_WRAP = b"""
local raw = ...
local function check(ok, ...)
  if ok then return ... end
  error((...), 0)
end
return function(...) return check(raw(...)) end
"""

# Lua type tags (lua.h) and the registry slots fengari shares with C Lua.
_TNIL, _TBOOLEAN, _TLIGHTUSERDATA, _TNUMBER, _TSTRING, _TTABLE, _TFUNCTION = range(7)
_TYPE_NAMES = ("nil", "boolean", "userdata", "number", "string", "table", "function",
               "userdata", "thread")
_RIDX_GLOBALS = 2
_MULTRET = -1
#: fengari's integers are 32-bit: a Python int outside goes to Lua as a double.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class LuaError(Exception):
    """An error raised in Lua (or a script that does not compile)."""


class LuaSyntaxError(LuaError):
    """A chunk that does not compile."""


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
    """One Lua state. ``encoding`` must be None (strings cross as bytes), as fakeredis asks."""

    def __init__(self, encoding: str | None = None, **_options: Any) -> None:
        if encoding is not None:
            raise ValueError("this Lua runtime passes strings as bytes only (encoding=None)")
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
        self._load(_PRELUDE, b"=prelude")
        self._call(0, 0)
        self._load(_WRAP, b"=wrap")
        self._wrap_ref = self._aux.luaL_ref(self._L, self._registry)

    # --- the stack -------------------------------------------------------------------------

    def _load(self, code: bytes, name: bytes = b"<python>") -> None:
        """Compile ``code`` onto the stack, or raise LuaSyntaxError."""
        buf = self._to_js(code)
        status = self._aux.luaL_loadbufferx(self._L, buf, len(code), name.decode(), "t")
        if status != 0:
            message = self._pop_message()
            raise LuaSyntaxError(message)

    def _pop_message(self) -> str:
        """Pop the error value on top of the stack as text."""
        L = self._L
        if self._lua.lua_type(L, -1) == _TSTRING:
            text = _to_bytes(self._lua.lua_tolstring(L, -1)).decode("utf-8", "replace")
        else:
            text = _to_bytes(self._aux.luaL_tolstring(L, -1)).decode("utf-8", "replace")
            self._lua.lua_pop(L, 1)
        self._lua.lua_pop(L, 1)
        return text

    def _call(self, nargs: int, nresults: int) -> None:
        """Call the function below ``nargs`` arguments; re-raise a Python error it hit."""
        self._pending = None
        status = self._lua.lua_pcall(self._L, nargs, nresults, 0)
        if status != 0:
            message = self._pop_message()
            pending, self._pending = self._pending, None
            if pending is not None and message == str(pending):
                raise pending
            raise LuaError(message)
        self._pending = None

    def _results(self, base: int) -> Any:
        """Pop everything above ``base``: None, one value, or a tuple of them."""
        top = self._lua.lua_gettop(self._L)
        values = [self._to_py(self._L, i) for i in range(base + 1, top + 1)]
        self._lua.lua_settop(self._L, base)
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def _ref(self, L: Any, index: int) -> int:
        """A registry reference to the value at ``index`` of ``L``."""
        self._lua.lua_pushvalue(L, index)
        return int(self._aux.luaL_ref(L, self._registry))

    def _to_py(self, L: Any, index: int) -> Any:
        """The Lua value at ``index`` as Python (as lupa's 5.1 runtime gives it)."""
        kind = self._lua.lua_type(L, index)
        if kind == _TNIL:
            return None
        if kind == _TBOOLEAN:
            return bool(self._lua.lua_toboolean(L, index))
        if kind == _TNUMBER:
            number = float(self._lua.lua_tonumber(L, index))
            if number.is_integer() and abs(number) < 2**63:
                return int(number)
            return number
        if kind == _TSTRING:
            return _to_bytes(self._lua.lua_tolstring(L, index))
        if kind == _TLIGHTUSERDATA:
            return self._objects.get(int(self._lua.lua_touserdata(L, index)))
        if kind == _TTABLE:
            return _LuaTable(self, self._ref(L, index))
        if kind == _TFUNCTION:
            return _LuaFunction(self, self._ref(L, index))
        return _LuaObject(self, self._ref(L, index), kind)

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
        elif isinstance(value, (bytes, bytearray, memoryview)):
            data = bytes(value)
            lua.lua_pushlstring(L, self._to_js(data), len(data))
        elif isinstance(value, str):
            self._push(L, value.encode("utf-8"))
        elif isinstance(value, _LuaObject) and value._runtime is self:
            lua.lua_rawgeti(L, self._registry, value._ref)
        elif callable(value):
            self._push_function(L, value)
        else:
            lua.lua_pushlightuserdata(L, self._handle(value))

    def _handle(self, value: Any) -> int:
        """A number standing for ``value`` in Lua (the same number each time)."""
        handle = self._handles.get(id(value))
        if handle is None:
            handle = len(self._objects) + 1
            self._handles[id(value)] = handle
            self._objects[handle] = value
        return handle

    def _push_function(self, L: Any, func: Callable[..., Any]) -> None:
        """Push a Lua function that calls ``func`` (errors raised on the Lua side)."""

        def bridge(state: Any) -> int:
            try:
                count = int(self._lua.lua_gettop(state))
                args = [self._to_py(state, i) for i in range(1, count + 1)]
                result = func(*args)
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
        status = self._lua.lua_pcall(L, 1, 1, 0)
        if status != 0:
            raise LuaError(self._pop_message())

    # --- lupa's API ------------------------------------------------------------------------

    def execute(self, code: bytes | str, *args: Any) -> Any:
        """Run a chunk with ``args`` (its ``...``); what it returns, as :meth:`_results`."""
        if isinstance(code, str):
            code = code.encode("utf-8")
        base = self._lua.lua_gettop(self._L)
        self._load(code)
        for arg in args:
            self._push(self._L, arg)
        try:
            self._call(len(args), _MULTRET)
        except BaseException:
            self._lua.lua_settop(self._L, base)
            raise
        return self._results(base)

    def eval(self, code: bytes | str, *args: Any) -> Any:
        """The value of a Lua expression."""
        if isinstance(code, str):
            code = code.encode("utf-8")
        return self.execute(b"return " + code, *args)

    def globals(self) -> _LuaTable:
        """The table of globals."""
        self._lua.lua_rawgeti(self._L, self._registry, _RIDX_GLOBALS)
        ref = int(self._aux.luaL_ref(self._L, self._registry))
        return _LuaTable(self, ref)

    def table_from(self, *sources: Any, recursive: bool = False) -> _LuaTable:
        """A new table holding the items of each list (from 1) and each dict (by key)."""
        L = self._L
        self._lua.lua_createtable(L, 0, 0)
        index = 0
        for source in sources:
            if isinstance(source, dict):
                for key, value in source.items():
                    self._push(L, self._nested(key, recursive))
                    self._push(L, self._nested(value, recursive))
                    self._lua.lua_settable(L, -3)
            else:
                for value in source:
                    index += 1
                    self._push(L, self._nested(value, recursive))
                    self._lua.lua_rawseti(L, -2, index)
        return _LuaTable(self, int(self._aux.luaL_ref(L, self._registry)))

    def _nested(self, value: Any, recursive: bool) -> Any:
        if recursive and isinstance(value, (dict, list, tuple)):
            return self.table_from(value, recursive=True)
        return value

    def require(self, name: bytes | str) -> Any:
        """``require(name)`` in Lua."""
        return self.globals()[b"require"](name)


class _LuaObject:
    """A Lua value held from Python by a registry reference (released when dropped)."""

    _kind = _TNIL

    def __init__(self, runtime: LuaRuntime, ref: int, kind: int | None = None) -> None:
        self._runtime = runtime
        self._ref = ref
        if kind is not None:
            self._kind = kind

    def __del__(self) -> None:
        try:
            self._runtime._aux.luaL_unref(
                self._runtime._L, self._runtime._registry, self._ref
            )
        except Exception:  # noqa: BLE001 - interpreter shutting down
            pass

    def _push_self(self) -> Any:
        L = self._runtime._L
        self._runtime._lua.lua_rawgeti(L, self._runtime._registry, self._ref)
        return L


class _LuaTable(_LuaObject):
    """A Lua table: ``t[k]``, ``t[k] = v`` (None deletes), ``in``, ``keys()``, ``values()``."""

    _kind = _TTABLE

    def __getitem__(self, key: Any) -> Any:
        rt = self._runtime
        L = self._push_self()
        rt._push(L, key)
        rt._lua.lua_gettable(L, -2)
        value = rt._to_py(L, -1)
        rt._lua.lua_settop(L, -3)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        rt = self._runtime
        L = self._push_self()
        rt._push(L, key)
        rt._push(L, value)
        rt._lua.lua_settable(L, -3)
        rt._lua.lua_settop(L, -2)

    def __delitem__(self, key: Any) -> None:
        self[key] = None

    def _pairs(self, values: bool = True) -> list[tuple[Any, Any]]:
        """Every key (and value, unless ``values`` is False: then None): 1, 2, ... first, in
        order (as C Lua walks its array part; fengari walks it in another order), then the
        other keys as ``next`` gives them."""
        rt = self._runtime
        lua = rt._lua
        L = self._push_self()
        pairs = []
        lua.lua_pushnil(L)
        while lua.lua_next(L, -2) != 0:
            pairs.append((rt._to_py(L, -2), rt._to_py(L, -1) if values else None))
            lua.lua_settop(L, -2)
        lua.lua_settop(L, -2)
        keys = {k for k, _ in pairs if type(k) is int}
        run = 0
        while (run + 1) in keys:
            run += 1
        if not run:
            return pairs
        head = sorted((p for p in pairs if type(p[0]) is int and 1 <= p[0] <= run),
                      key=lambda p: int(p[0]))
        return head + [p for p in pairs if not (type(p[0]) is int and 1 <= p[0] <= run)]

    def keys(self) -> list[Any]:
        return [k for k, _ in self._pairs(values=False)]

    def values(self) -> list[Any]:
        return [v for _, v in self._pairs()]

    def items(self) -> list[tuple[Any, Any]]:
        return self._pairs()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.keys())

    def __contains__(self, key: Any) -> bool:
        return key in self.keys()

    def __len__(self) -> int:
        rt = self._runtime
        L = self._push_self()
        size = int(rt._lua.lua_rawlen(L, -1))
        rt._lua.lua_settop(L, -2)
        return size


class _LuaFunction(_LuaObject):
    """A Lua function: calling it runs it (Python errors inside re-raised, Lua ones as LuaError)."""

    _kind = _TFUNCTION

    def __call__(self, *args: Any) -> Any:
        rt = self._runtime
        base = rt._lua.lua_gettop(rt._L)
        L = self._push_self()
        for arg in args:
            rt._push(L, arg)
        try:
            rt._call(len(args), _MULTRET)
        except BaseException:
            rt._lua.lua_settop(L, base)
            raise
        return rt._results(base)


def lua_type(value: Any) -> str | None:
    """'table', 'function', ... for a Lua value; None for a Python one."""
    if isinstance(value, _LuaObject):
        return _TYPE_NAMES[value._kind]
    return None


@contextmanager
def allow_lua_module_loading() -> Iterator[None]:
    """lupa's guard around importing ``lupa.lua51``: nothing to guard here."""
    yield


def install() -> None:
    """Make ``import lupa`` and ``lupa.lua51`` give this module (before fakeredis is imported)."""
    if "lupa" in sys.modules and getattr(sys.modules["lupa"], "LuaRuntime", None) is LuaRuntime:
        return
    module = sys.modules[__name__]
    package = types.ModuleType("lupa")
    for name in ("LuaRuntime", "LuaError", "LuaSyntaxError", "lua_type",
                 "allow_lua_module_loading"):
        setattr(package, name, getattr(module, name))
    package.lua51 = module  # type: ignore[attr-defined]
    package.__path__ = []  # a package, so importlib finds lupa.lua51 in sys.modules
    sys.modules["lupa"] = package
    sys.modules["lupa.lua51"] = module


if sys.platform == "emscripten":  # in the browser, importing this module puts it in place
    install()
