"""RunFolder: the one rule for a run folder's run.json (written whole and atomically, read back, resume keys)."""

import json

import pytest

from j1.runs.runinfo import RunFolder

KEYS = {"command", "argv", "config", "versions", "git", "started", "seconds"}


def test_write_records_config_versions_and_extra(tmp_path):
    folder = RunFolder(tmp_path / "run", command="j1 train", started=0.0)
    info = folder.write({"seed": 3}, status="running", interruptions=[])
    on_disk = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert on_disk == info
    assert KEYS | {"status", "interruptions"} == set(on_disk)
    assert (on_disk["command"], on_disk["config"], on_disk["status"]) == ("j1 train", {"seed": 3}, "running")


def test_a_later_write_replaces_the_whole_record(tmp_path):
    folder = RunFolder(tmp_path, command="j1 warmup")
    folder.write({}, status="running", resumed_step=0)
    folder.write({}, status="done", global_step=4)
    recorded = folder.recorded()
    assert (recorded["status"], recorded["global_step"]) == ("done", 4)
    assert "resumed_step" not in recorded
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # written via a temp file, none left


def test_record_names_a_side_file(tmp_path):
    """A pair file's run keeps run.json beside it (j1 synth: math.run.json; j1 synth mix: mix.run.json)."""
    folder = RunFolder(tmp_path, command="j1 synth mix", record="mix.run.json")
    folder.write({"seed": 0}, train_rows=2)
    assert folder.run_json == tmp_path / "mix.run.json"
    assert not (tmp_path / "run.json").exists()
    assert folder.recorded()["train_rows"] == 2


def test_recorded_is_empty_without_run_json(tmp_path):
    assert RunFolder(tmp_path / "new", command="eval").recorded() == {}
    assert (tmp_path / "new").is_dir()  # made on start


def test_recorded_names_a_broken_run_json(tmp_path):
    (tmp_path / "run.json").write_text('{"interruptions": [\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"run\.json: not valid JSON \(line 2"):
        RunFolder(tmp_path, command="j1 train").recorded()


@pytest.mark.parametrize("config", [{"seed": 1, "model": "m"}, "dataclass"])
def test_resume_with_changed_keys_is_refused(tmp_path, config):
    from dataclasses import make_dataclass

    folder = RunFolder(tmp_path, command="eval", resume_keys=("seed", "model"))
    folder.write({"seed": 0, "model": "m"})
    if config == "dataclass":
        config = make_dataclass("C", [("seed", int), ("model", str)])(1, "m")
    with pytest.raises(ValueError, match=r"--seed was 0, now 1\); use the same settings or another --out"):
        folder.check_resume(config, resume=True)
    folder.check_resume({"seed": 0, "model": "m"}, resume=True)  # unchanged: allowed


def test_a_folder_with_results_needs_resume(tmp_path):
    folder = RunFolder(tmp_path, command="eval")
    folder.result.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(FileExistsError, match="pass --resume"):
        folder.check_resume({}, resume=False)


def test_run_json_is_read_through_run_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        RunFolder.read(tmp_path)
    (tmp_path / "run.json").write_text('{"command": "eval",\n "config": }', encoding="utf-8")
    with pytest.raises(ValueError, match=r"run.json: not valid JSON \(line 2: Expecting value\)"):
        RunFolder.read(tmp_path)
    (tmp_path / "run.json").write_text('{"command": "eval", "config": {"seed": 3}}', encoding="utf-8")
    assert RunFolder.read(tmp_path) == {"command": "eval", "config": {"seed": 3}}
