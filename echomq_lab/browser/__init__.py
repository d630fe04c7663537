"""Part of the protocol core, for the browser only: under Pyodide there is no ``lupa``, so
:mod:`lua` gives fakeredis the part of it that it uses, over fengari (``prelude.lua`` evens out
Lua 5.3 against Valkey's 5.1). :func:`echomq_lab.connection.connect` puts it in place. A tab
opens no TCP socket either: :mod:`websocket` is a redis-py connection over the page's WebSocket
to a workshop room's gateway (:func:`echomq_lab.classroom.desk.join` uses it there).

May import nothing of the package.
"""
