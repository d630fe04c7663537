"""The host-side includes: ``--@include <name>`` lines the loader replaces with include files.

The expansion is tested on made-up texts (in place, nested, once per script, the errors), then
on what ships: no directive reaches a server, each include is used, each script's header is
its own file's, and an error raised inside an included function is reported at the line of
the expanded source the server ran.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest
import redis

from echomq_lab import scripts
from echomq_lab.scripts import IncludeError, Script, expand, include_text, includes, load, names

PARTS = {
    "leaf": "local function leaf() return 1 end",
    "middle": "--@include leaf\nlocal function middle() return leaf() + 1 end",
    "other": "--@include leaf\nlocal function other() return leaf() + 2 end",
    "loop_a": "--@include loop_b",
    "loop_b": "--@include loop_a",
    "self": "-- includes itself\n--@include self",
    "bad": "--@include nowhere",
}


def read(name: str) -> str:
    """An include's text from :data:`PARTS`, or the loader's own IncludeError."""
    if name not in PARTS:
        raise IncludeError(f"no include named {name!r}")
    return PARTS[name]


def test_a_directive_is_replaced_by_the_include_in_place() -> None:
    text = "-- t: a test script\n--@include leaf\nreturn leaf()\n"
    assert expand(text, "t.lua", read) == (
        "-- t: a test script\nlocal function leaf() return 1 end\nreturn leaf()\n"
    )


def test_an_include_may_include_another_and_each_is_put_in_once() -> None:
    text = "--@include middle\n--@include other\n--@include leaf\nreturn middle() + other()"
    got = expand(text, "t.lua", read).splitlines()
    assert got == [
        PARTS["leaf"],
        "local function middle() return leaf() + 1 end",
        "local function other() return leaf() + 2 end",
        "return middle() + other()",
    ]


def test_a_text_with_no_directive_is_left_as_it_is() -> None:
    text = "-- just code\nreturn 1\n"
    assert expand(text, "t.lua", read) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("return 1\n--@include nowhere", "t.lua:2: no include named 'nowhere'"),
        ("--@include bad", "t.lua:1: include/bad.lua:1: no include named 'nowhere'"),
        ("--@include loop_a", "include cycle loop_a -> loop_b -> loop_a"),
        ("--@include self", "include/self.lua:2: include cycle self -> self"),
        ("--@include Leaf", "t.lua:1: malformed directive '--@include Leaf'"),
        ("--@includ leaf", "malformed directive"),
        ("--@include leaf extra", "malformed directive"),
        ("  --@include leaf", "malformed directive"),
    ],
)
def test_bad_directives_are_refused_with_where_and_why(text: str, message: str) -> None:
    with pytest.raises(IncludeError, match=re.escape(message)):
        expand(text, "t.lua", read)


def test_the_package_reader_names_the_missing_file() -> None:
    with pytest.raises(IncludeError, match=r"no include named 'nowhere' \(looked for include/"):
        include_text("nowhere")
    with pytest.raises(IncludeError, match="x.lua:1: no include named 'nowhere'"):
        expand("--@include nowhere", "x.lua")
    assert issubclass(IncludeError, ValueError)


def test_no_shipped_script_keeps_a_directive_and_every_include_is_used() -> None:
    used: set[str] = set()
    for name in names():
        raw = resources.files("echomq_lab.scripts").joinpath(f"{name}.lua").read_text("utf-8")
        source = load(name).source
        assert "--@" not in source, name
        used |= set(re.findall(r"^--@include (\w+)$", raw, re.M))
        for part in includes():
            used |= set(re.findall(r"^--@include (\w+)$", include_text(part), re.M))
    assert used == set(includes())
    for part in includes():
        assert "--@" not in expand(include_text(part), f"{part}.lua")


@pytest.mark.parametrize("name", ["claim", "promote", "reap", "enqueue", "schedule"])
def test_the_sharing_scripts_hold_each_include_once(name: str) -> None:
    source = load(name).source
    for part in includes():
        head = include_text(part).splitlines()[0]
        assert head.startswith(f"-- include {part}: ")
        assert source.count(head) <= 1, (name, part)
    functions = re.findall(r"^local function (\w+)\(", source, re.M)
    assert len(functions) == len(set(functions)), name
    assert "on purpose" not in load(name).header, name


def test_an_include_name_is_no_script_name() -> None:
    assert not set(includes()) & set(names())
    for part in includes():
        with pytest.raises(KeyError, match="no script named"):
            load(part)
    with pytest.raises(KeyError, match="no script named"):
        load("include")


@pytest.mark.parametrize("name", names())
def test_the_header_is_the_script_files_own(name: str) -> None:
    script = load(name)
    raw = resources.files("echomq_lab.scripts").joinpath(f"{name}.lua").read_text("utf-8")
    assert raw.startswith(script.header + "\n")
    assert script.header.startswith(f"-- {name}:")
    assert "-- include " not in script.header
    assert scripts.leading_comments(raw) == script.header
    assert script.sha == Script(name, script.source).sha


def test_a_script_made_from_text_reads_its_header_from_that_text() -> None:
    probe = Script("probe", "-- probe: a test\n-- Reply: 1\nreturn 1")
    assert probe.header == "-- probe: a test\n-- Reply: 1"


def test_an_error_in_an_include_is_reported_at_its_expanded_line(
    conn: redis.Redis, backend_name: str
) -> None:
    parts = {"boom": "-- include boom: fails on purpose\nlocal function boom()\n"
                     "  return 1 + nil\nend"}  # fmt: skip
    source = expand("-- t: a test\n--@include boom\nreturn boom()", "t.lua", parts.__getitem__)
    line = source.splitlines().index("  return 1 + nil") + 1
    with pytest.raises(redis.ResponseError) as caught:
        Script("t", source)(conn, [], [])
    if backend_name == "fakeredis":
        assert "nil" in str(caught.value)  # lupa's wording; no line numbers to compare
    else:
        assert re.search(rf":{line}:", str(caught.value)), str(caught.value)
