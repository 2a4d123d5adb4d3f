"""``j1 probe`` (the verdict's log-odds, read from the logits) and ``j1 attack`` (the attack runner) on the
device, each with a tiny budget. Neither has a device flag: both load the judge on cuda when present."""

from __future__ import annotations

import json

import pytest
from train.tiny import write_pairs

from j1.cli.main import main

pytestmark = pytest.mark.gpu


def test_probe_logodds_on_the_device_match_the_cpu(tiny_model, tmp_path, device):
    from j1.probe import runner as probe
    from j1.train.data import load_pairs

    model, tok = probe.probe_model(str(tiny_model), device="cpu")
    texts = probe.forced_texts(tok, probe.probe_rows(load_pairs(str(write_pairs(tmp_path / "pairs.jsonl", 6)))))
    on_cpu = probe.verdict_logodds(model, tok, texts, batch_size=4)
    model, tok = probe.probe_model(str(tiny_model), device=device)
    assert next(model.parameters()).device.type == device
    assert probe.verdict_logodds(model, tok, texts, batch_size=4) == pytest.approx(on_cpu, abs=1e-4)


def test_probe_command_on_the_device(tiny_model, tmp_path, device, monkeypatch, capsys):
    from j1.probe import runner as probe

    seen: list[str] = []
    real = probe.verdict_logodds

    def spy(model, *args, **kwargs):
        seen.append(next(model.parameters()).device.type)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(probe, "verdict_logodds", spy)
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "probe.json"
    capsys.readouterr()
    assert main(["probe", "--model", str(tiny_model), "--data", str(pairs), "--batch_size", "3", "--limit", "6",
                 "--out", str(out), "--no_progress"]) == 0
    assert seen == [device]
    summary = json.loads(capsys.readouterr().out)
    assert summary["all"]["pairs"] == 6
    saved = json.loads(out.read_text())
    assert [p["pair_id"] for p in saved["pairs"]] == [f"p{i}" for i in range(6)]


def test_attack_command_on_the_device(tiny_model, tmp_path, device, generations, capsys):
    out = tmp_path / "attack"
    capsys.readouterr()
    assert main(["attack", "--model", str(tiny_model), "--format", "pav", "--limit", "1", "--max_new_tokens", "4",
                 "--n_boot", "50", "--progress", "false", "--out", str(out)]) == 0
    assert generations.on(device)
    lines = (out / "judgments.jsonl").read_text().splitlines()
    assert len(lines) == 16 * 2  # 1 row x (15 attacks + control) x 2 orders
    report = json.loads((out / "report.json").read_text())
    assert report["overall"]["n"] == 15 and report["control"]["n"] == 1
    assert json.loads(capsys.readouterr().out)["overall"] == report["overall"]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
