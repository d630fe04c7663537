"""The glossed scripts: every command a shipped script calls is explained; the annotation
keeps the script's own text; the marks flag exactly the lines asked for; the primer covers
what a reader needs."""

from __future__ import annotations

import re

import pytest

from echomq_lab import jobs, lua_notes, scripts
from echomq_lab.widgets.beats import annotated_script, primer, script_source, two_beats


@pytest.mark.parametrize("name", scripts.names())
def test_every_command_a_script_calls_has_a_gloss(name: str) -> None:
    source = scripts.load(name).source
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
    assert len(lines) == len(glossed)
    for line, out in zip(lines, glossed, strict=True):
        assert out.startswith(line)
        names = [] if line.lstrip().startswith("--") else lua_notes.CALL.findall(line)
        if names:
            tail = out[len(line):]
            assert tail.lstrip().startswith("-- ")
            for n in names:
                assert f"{n}: {lua_notes.GLOSS[n]}" in tail
        else:
            assert out == line


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
        "if attempts ~= ARGV[2] then", "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then"]


def test_the_primer_covers_what_the_scripts_use() -> None:
    text = primer().data
    for needed in ("`KEYS` and `ARGV`", "redis.call(", "redis.error_reply(", "redis.call('TIME')",
                   "`~=`", "`..`", "`#t`"):
        assert needed in text, needed
    every_script = "\n".join(script_source(n) for n in scripts.names())
    for example in re.findall(r"`([^`]*(?:KEYS\[|ARGV\[|#popped)[^`]*)`", text):
        assert example in every_script, f"the primer's example {example!r} is not in a script"
