"""``benchmarks/classroom.py`` runs: a room of its own (``start``, its own process), robots in
processes of their own through the gateway on ``--port``, and the figures it promises, written
as JSON. A short storm of a few robots; no assertion reads a clock. On a real Valkey."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import classroom
from echomq_lab import servers


def test_a_short_storm_through_the_gateway_writes_its_figures(
        tmp_path: Path, valkey_tools: tuple[str, str]) -> None:
    out = tmp_path / "classroom.json"
    port = servers.free_port()
    code = classroom.main(["--learners", "4", "--seconds", "2", "--pace", "storm",
                           "--processes", "2", "--port", str(port), "--out", str(out)])
    storm = json.loads(out.read_text())["storm"]
    assert code == 0
    assert storm["learners"] == 4 and storm["robot_processes"] == 2
    assert storm["claims"] > 0 and storm["completed"] + storm["dead"] == storm["jobs"]
    assert storm["fence_violations"] == 0 and storm["tally_matches_every_learner"]
    assert storm["robots_died"] == 0 and storm["left"]["active"] == 0
    assert set(storm["cpu_share_of_one_core"]) == {"server", "gateway, reaper", "robots",
                                                   "this feeder"}


def test_a_room_that_refuses_the_benchmark_fails_it_loudly_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], valkey_tools: tuple[str, str]) -> None:
    code = classroom.main(["--learners", "1001", "--seconds", "1", "--pace", "class",
                           "--out", str(tmp_path / "classroom.json")])
    said = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in said
    assert said.startswith("benchmarks.classroom: the room refused the class run:")
    assert "1 to 1000" in said and not (tmp_path / "classroom.json").exists()
