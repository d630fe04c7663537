"""Processor time, read from Linux's ``/proc``: of one process, and of a tree of processes by
what each thread does.

:func:`process_seconds` is one process's user and system time so far. :func:`tree_seconds`
walks every process below a root (this benchmark's own children: the Playwright driver, the
browser it starts, a server started for the run) and adds up each thread's time under a
*part* (:func:`part`): for a Chromium tab, its page's thread, the Python worker, the threads
that compile in the background; every other process by its program. :func:`spent` is what a
stretch of work cost: the difference of two readings, parts that did nothing left out. Where
``/proc`` is missing (not Linux) every reading is empty and every figure 0.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: A Chromium thread's name -> the part it does, for the threads that matter to a page.
CHROMIUM_THREADS = {
    "CrRendererMain": "page (JavaScript, layout, drawing)",
    "DedicatedWorker": "Python (the kernel's worker)",
    "ThreadPoolForeg": "compiling in the background (WebAssembly, JavaScript)",
    "ServiceWorker t": "service worker",
}


def _stat(path: Path) -> tuple[str, list[str]]:
    text = path.read_text()
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def process_seconds(pid: int) -> float:
    """User and system seconds of process ``pid`` so far (all its threads), 0 when unknown."""
    try:
        fields = _stat(Path(f"/proc/{pid}/stat"))[1]
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, as ``/proc`` lists them now."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def command_line(pid: int) -> str:
    """Process ``pid``'s command line, its arguments joined by spaces ("" when gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def program(line: str) -> str:
    """What the process whose command line is ``line`` is: ``chromium`` for any of the
    browser's processes, else the name of its program (``python`` for a Python script, ...)."""
    if not line:
        return "?"
    if "chromium" in line or "--renderer-client-id" in line or "--type=" in line:
        return "chromium"
    first = line.split(" ", 1)[0]
    return re.sub(r"[\d.]+$", "", os.path.basename(first)) or "?"


def _is_renderer(line: str) -> bool:
    return "--type=renderer" in line or "--renderer-client-id" in line


def part(program_name: str, thread: str) -> str:
    """The part a thread's time counts under (see :data:`CHROMIUM_THREADS`)."""
    if program_name != "chromium":
        return program_name
    for prefix, name in CHROMIUM_THREADS.items():
        if thread.startswith(prefix):
            return name
    return "browser, the rest"


def tree_seconds(root: int, leave_out: frozenset[int] = frozenset()
                 ) -> dict[tuple[int, str], tuple[str, float]]:
    """Every thread of every process below ``root`` (not ``root`` itself, nor the processes in
    ``leave_out``) now: (pid, thread id) -> (its part, its seconds so far)."""
    reading: dict[tuple[int, str], tuple[str, float]] = {}
    for pid in descendants(root)[1:]:
        if pid in leave_out:
            continue
        line = command_line(pid)
        name = program(line)
        renderer = name == "chromium" and _is_renderer(line)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                thread, fields = _stat(task / "stat")
                if renderer and task.name == str(pid):  # a tab's main thread keeps no name
                    thread = "CrRendererMain"
                seconds = (int(fields[11]) + int(fields[12])) / TICKS
            except (OSError, IndexError, ValueError):
                continue
            reading[(pid, task.name)] = (part(name, thread), seconds)
    return reading


def spent(before: dict[tuple[int, str], tuple[str, float]],
          after: dict[tuple[int, str], tuple[str, float]]) -> dict[str, float]:
    """Seconds each part spent from ``before`` to ``after`` (a thread born meanwhile counts
    from 0; one that ended meanwhile is lost: read ``after`` before closing what you measure),
    largest first, rounded to hundredths."""
    parts: dict[str, float] = {}
    for key, (name, seconds) in after.items():
        grew = seconds - before.get(key, (name, 0.0))[1]
        if grew > 0:
            parts[name] = parts.get(name, 0.0) + grew
    return {k: round(v, 2) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])}
