"""The glossed scripts: every command a shipped script calls is explained; the annotation
keeps the script's own text; the marks flag exactly the lines asked for; the primer covers
what a reader needs."""

from __future__ import annotations

import re

import pytest

from echomq_lab import jobs, scripts
from echomq_lab.lessons import lua_notes
from echomq_lab.widgets import beats
from echomq_lab.widgets.beats import annotated_script, primer, script_source, two_beats


@pytest.mark.parametrize("name", scripts.names())
def test_every_command_a_script_calls_has_a_gloss(name: str) -> None:
    source = scripts.load(name).source
    if scripts.is_stub(name):
        pytest.skip(f"{name} is not written yet: its script is the stub `make transition` wrote")
    called = lua_notes.commands(source)
    assert called, f"{name}.lua calls no Redis command?"
    assert lua_notes.unglossed(source) == [], f"{name}.lua calls commands with no gloss"
    assert all(lua_notes.GLOSS[c].strip() for c in called)


def test_unglossed_finds_a_command_without_a_gloss() -> None:
    assert lua_notes.unglossed("redis.call('OBJECT', 'ENCODING', KEYS[1])") == ["OBJECT"]
    assert lua_notes.commands("-- redis.call('DEL', KEYS[1])\nreturn 1") == []


@pytest.mark.parametrize("name", scripts.names())
def test_the_annotation_keeps_the_script_and_glosses_each_call(name: str) -> None:
    source = script_source(name)
    shown = annotated_script(name)
    lines, glossed = source.rstrip("\n").splitlines(), shown.rstrip("\n").splitlines()
    i = 0
    for out in glossed:  # every line of the script, in order; the rest are gloss comments
        if i < len(lines) and out.startswith(lines[i]):
            i += 1
        else:
            assert out.lstrip().startswith("-- "), out
    assert i == len(lines)
    flat = " ".join(part.strip().removeprefix("-- ") for part in glossed)
    for line in lines:
        names = [] if line.lstrip().startswith("--") else lua_notes.CALL.findall(line)
        for n in names:
            assert f"{n}: {lua_notes.GLOSS[n]}" in " ".join(flat.split()), n
    widest = max(len(line) for line in lines)
    assert all(len(out) <= max(widest, lua_notes.WIDTH) for out in glossed)


def test_a_long_gloss_wraps_at_word_boundaries() -> None:
    source = "local got = redis.call('HMGET', ARGV[1] .. id, 'attempts', 'payload', 'state')\n"
    shown = lua_notes.annotate(source).splitlines()
    assert shown[-1] == source.strip()  # the gloss went above a line too long to carry it
    gloss = " ".join(line.removeprefix("-- ") for line in shown[:-1])
    assert gloss == f"HMGET: {lua_notes.GLOSS['HMGET']}"
    narrow = lua_notes.annotate("redis.call('TYPE', k)\n", width=60).splitlines()
    words = set(lua_notes.GLOSS["TYPE"].replace(",", " ").split())
    for line in narrow:
        last = line.split("-- ", 1)[1].split()[-1].strip(",")
        assert last in words | {"TYPE:"}  # no word cut in two


def test_the_fold_shows_the_file_and_folds_its_header_and_includes() -> None:
    shown = two_beats(jobs.claim, "claim", mark=("HINCRBY",), fold=True).data
    lua = shown.split("```lua\n", 1)[1].split("```", 1)[0]
    assert not lua.startswith("-- claim:")  # the header is in the fold
    assert "<details><summary>" in shown and shown.rstrip().endswith("</details>")
    fold = shown.split("<details>", 1)[1]
    assert fold.count("-- claim: lease") == 1
    assert "--@include pick" in lua  # the file names its hardening where it stands
    assert beats.includes("claim") == ["argument", "well_formed", "pick", "whole"]  # nested too
    for name in beats.includes("claim"):
        assert f"scripts/include/{name}.lua" in fold


def test_marks_flag_exactly_the_lines_asked_for() -> None:
    shown = two_beats(jobs.claim, "claim", mark=("HINCRBY",)).data
    flagged = [line for line in shown.splitlines() if lua_notes.MARK in line]
    assert len(flagged) == 2  # the line itself, and the sentence naming it
    assert flagged[0].startswith("local token = redis.call('HINCRBY', row, 'attempts', 1)")
    assert "this page is about: `local token = redis.call('HINCRBY'" in flagged[1]
    assert "def claim(" in shown and "```lua\n-- claim: lease" in shown
    plain = two_beats(jobs.claim, "claim").data
    assert lua_notes.MARK not in plain and "HINCRBY: add to a field" in plain
    with pytest.raises(ValueError, match="nothing in the script matches the mark 'HINCRBYY'"):
        two_beats(jobs.claim, "claim", mark=("HINCRBYY",))
    complete = annotated_script("complete", mark=("attempts ~=", "ZSCORE"))
    assert [line.split("--")[0].strip() for line in complete.splitlines()
            if lua_notes.MARK in line] == [
        "if attempts ~= token then", "if not redis.call('ZSCORE', KEYS[1], id) then"]


def test_the_primer_covers_what_the_scripts_use() -> None:
    text = primer().data
    for needed in ("`KEYS` and `ARGV`", "redis.call(", "redis.error_reply(", "redis.call('TIME')",
                   "`~=`", "`..`", "`#t`"):
        assert needed in text, needed
    every_script = "\n".join(script_source(n) for n in scripts.names())
    for example in re.findall(r"`([^`]*(?:KEYS\[|ARGV\[|#popped)[^`]*)`", text):
        assert example in every_script, f"the primer's example {example!r} is not in a script"
