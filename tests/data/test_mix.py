"""``j1 synth mix``: amounts per file, held-out split by prompt, both orders, seeded A/B placement, reader."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from j1.cli.main import main
from j1.data.mix import both_orders, parse_input, split_by_prompt
from j1.pairs import shown_label
from j1.runs.atomic import dumps
from j1.schema import PairRecord, RowError, read_train_rows


def _pairs(kind: str, n: int, prompts: int | None = None) -> list[PairRecord]:
    """n pairs over `prompts` distinct prompts (two pairs share a prompt when prompts < n)."""
    prompts = prompts or n
    return [PairRecord(f"{kind}{i:03d}", f"{kind} prompt {i % prompts}", f"good {i}", f"bad {i}", kind, f"{kind}.jsonl")
            for i in range(n)]


def _write(path: Path, pairs) -> Path:
    path.write_text("".join(dumps(p) + "\n" for p in pairs), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return (_write(tmp_path / "chat.jsonl", _pairs("chat", 60, prompts=40)),
            _write(tmp_path / "math.jsonl", _pairs("math", 30)))


def _mix(files, out, *args):
    chat, math = files
    return main(["synth", "mix", "--inputs", f"{chat}:34", f"{math}:all", "--out_dir", str(out),
                 "--heldout_fraction", "0.2", *args])


def test_amounts_split_both_orders(files, tmp_path, capsys):
    out = tmp_path / "mix"
    assert _mix(files, out) == 0
    train, held = read_train_rows(out / "train.jsonl"), read_train_rows(out / "heldout.jsonl")
    rows = train + held
    pair_kinds = Counter(r.kind for r in rows if r.order == "AB")
    assert pair_kinds == {"chat": 34, "math": 30}  # 34 drawn from chat, all 30 math
    # both orders of every pair, on consecutive lines, same responses and label
    for ab, ba in zip(rows[::2], rows[1::2], strict=True):
        assert (ab.pair_id, ab.order, ba.order) == (ba.pair_id, "AB", "BA")
        assert (ab.response_a, ab.response_b, ab.label) == (ba.response_a, ba.response_b, ba.label)
        assert ab.shown() == (ab.response_a, ab.response_b) and ba.shown() == (ab.response_b, ab.response_a)
        assert ab.label_shown == ab.label and ba.label_shown == shown_label(ab.label, "BA")
        better = ab.response_a if ab.label == "A" else ab.response_b
        assert better.startswith("good")  # the label names chosen
    # split by prompt: no prompt on both sides; about 20% of distinct prompts held out
    train_prompts, held_prompts = {r.prompt for r in train}, {r.prompt for r in held}
    assert not train_prompts & held_prompts
    assert len(held_prompts) == round(0.2 * len(train_prompts | held_prompts))
    # the label is not always A: over 64 pairs both placements occur, roughly half each
    labels = Counter(r.label for r in rows if r.order == "AB")
    assert labels["A"] > 15 and labels["B"] > 15
    stats = json.loads((out / "mix.stats.json").read_text())
    assert stats["train"]["rows"] == len(train) and stats["heldout"]["rows"] == len(held)
    assert stats["train"]["pairs"] + stats["heldout"]["pairs"] == 64
    assert (out / "mix.run.json").exists()
    assert "train:" in capsys.readouterr().out


def test_seeded(files, tmp_path):
    _mix(files, tmp_path / "a")
    _mix(files, tmp_path / "b")
    _mix(files, tmp_path / "c", "--seed", "1")
    a, b, c = ((tmp_path / d / "train.jsonl").read_text() for d in "abc")
    assert a == b and a != c


def test_shared_prompt_pairs_stay_together():
    pairs = _pairs("chat", 60, prompts=20)  # each prompt has 3 pairs
    for seed in range(5):
        train, held = split_by_prompt(pairs, 0.25, seed)
        assert len(held) == 3 * 5 and len(train) == 3 * 15  # 5 of 20 prompts held out, with all 3 pairs each
        assert not {p.prompt for p in train} & {p.prompt for p in held}


def test_prompts_equal_up_to_whitespace_are_one_group():
    pairs = [PairRecord("a", "Same  prompt", "g", "b", "chat", "s"), PairRecord("b", "Same prompt\n", "g", "b", "chat", "s")]
    train, held = split_by_prompt(pairs, 1 / 3, 0)
    assert (len(train), len(held)) == (2, 0)  # one group: round(1/3 * 1) = 0 groups held out
    train, held = split_by_prompt(pairs + [PairRecord("c", "other", "g", "b", "chat", "s")], 0.5, 0)
    assert sorted(len(side) for side in (train, held)) == [1, 2]  # 2 groups, 1 held out; the two stay together


def test_both_orders_placement_is_keyed_on_id():
    p = PairRecord("fixed-id", "q", "good", "bad", "chat", "s")
    assert both_orders(p, 0) == both_orders(p, 0)
    placements = {both_orders(PairRecord(f"id{i}", "q", "good", "bad", "chat", "s"), 0)[0].label for i in range(40)}
    assert placements == {"A", "B"}


@pytest.mark.parametrize("spec,expected", [
    ("a.jsonl", ("a.jsonl", None)),
    ("dir/a.jsonl:10", ("dir/a.jsonl", 10)),
    ("a.jsonl:all", ("a.jsonl", None)),
    ("a.jsonl:0", ("a.jsonl", 0)),
    ("C:/data/a.jsonl", ("C:/data/a.jsonl", None)),  # a colon inside the path is not an amount
])
def test_parse_input(spec, expected):
    path, n = parse_input(spec)
    assert (str(path), n) == expected


@pytest.mark.parametrize("spec,message", [("a.jsonl:lots", "must be a pair count or 'all'"), ("a.jsonl:-1", ">= 0")])
def test_parse_input_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_input(spec)


def test_too_many_requested_and_missing_file(files, tmp_path, capsys):
    chat, _ = files
    assert main(["synth", "mix", "--inputs", f"{chat}:61", "--out_dir", str(tmp_path / "o")]) == 2
    assert re.search(r"asks for 61 pairs but .* has 60", capsys.readouterr().err)
    assert main(["synth", "mix", "--inputs", str(tmp_path / "none.jsonl"), "--out_dir", str(tmp_path / "o")]) == 2
    assert "no such pair file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["synth", "mix", "--inputs", str(chat), "--out_dir", str(tmp_path / "o"), "--heldout_fraction", "1"])
    assert "--heldout-fraction 1.0: must be in [0, 1)" in capsys.readouterr().err


def test_duplicate_ids_across_inputs_taken_once(files, tmp_path):
    chat, _ = files
    assert main(["synth", "mix", "--inputs", str(chat), str(chat), "--out_dir", str(tmp_path / "o"),
                 "--heldout_fraction", "0"]) == 0
    assert len(read_train_rows(tmp_path / "o" / "train.jsonl")) == 2 * 60


def test_exclude_drops_pairs_sharing_a_prompt_or_response_before_the_draw(files, tmp_path, capsys):
    chat, math = files
    held = _write(tmp_path / "eval.jsonl", [
        PairRecord("e1", "chat  prompt 3", "x", "y", "chat", "e"),     # the prompt of chat003 and chat043
        PairRecord("e2", "other", "good 7", "z", "chat", "e"),         # the chosen of chat007 and math007
        PairRecord("e3", "other 2", "w", " bad\t12 ", "chat", "e"),   # chat012's and math012's rejected
        PairRecord("e4", "math prompt 5", "good 5", "v", "math", "e"),  # math005 (prompt, chosen), chat005
    ])
    out = tmp_path / "o"
    assert main(["synth", "mix", "--inputs", f"{chat}:55", f"{math}:all", "--exclude", str(held),
                 "--out_dir", str(out), "--heldout_fraction", "0"]) == 0
    ab = [r for r in read_train_rows(out / "train.jsonl") if r.order == "AB"]
    ids = {r.pair_id for r in ab}
    gone = {"chat003", "chat043", "chat005", "chat007", "chat012", "math005", "math007", "math012"}
    assert len(ab) == 55 + 27 and not ids & gone
    stats = json.loads((out / "mix.stats.json").read_text())
    assert stats["inputs"][str(chat)] == {"available": 55, "drawn": 55, "kinds": {"chat": 55}, "excluded": 5}
    assert stats["inputs"][str(math)]["excluded"] == 3 and stats["exclude"] == [str(held)]
    # N counts the pairs left after the exclusion
    assert main(["synth", "mix", "--inputs", f"{chat}:56", "--exclude", str(held), "--out_dir", str(out)]) == 2
    assert re.search(r"asks for 56 pairs but .* has 55", capsys.readouterr().err)
    assert main(["synth", "mix", "--inputs", str(chat), "--exclude", str(tmp_path / "no.jsonl"),
                 "--out_dir", str(out)]) == 2
    assert "--exclude" in capsys.readouterr().err


def test_exclude_takes_another_mixs_rows(files, tmp_path):
    # A held-out split (rows in both orders) keeps its pairs out of a second draw from other files.
    chat, math = files
    first = tmp_path / "first"
    assert main(["synth", "mix", "--inputs", str(chat), "--heldout_fraction", "0.2", "--out_dir", str(first)]) == 0
    held = {r.prompt for r in read_train_rows(first / "heldout.jsonl")}
    assert len(held) == 8  # 8 of the 40 prompts, 11 of the 60 pairs
    second = tmp_path / "second"
    assert main(["synth", "mix", "--inputs", str(chat), "--exclude", str(first / "heldout.jsonl"),
                 "--heldout_fraction", "0", "--out_dir", str(second)]) == 0
    rows = read_train_rows(second / "train.jsonl")
    assert not {r.prompt for r in rows} & held and len(rows) == 2 * 49


def test_bad_pair_file_names_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(dumps(_pairs("chat", 1)[0]) + "\n" + json.dumps({"id": "x", "prompt": "p", "chosen": "c"}) + "\n")
    with pytest.raises(RowError, match=r"bad\.jsonl:2: missing field 'rejected'"):
        main(["synth", "mix", "--inputs", str(bad), "--out_dir", str(tmp_path / "o"), "--debug"])


@pytest.mark.parametrize("change,message", [
    ({"order": "CA"}, "field 'order' must be AB or BA"),
    ({"label": "C"}, "field 'label' must be A or B"),
    ({"label_shown": "A"}, "field 'label_shown' 'A' contradicts label"),
    ({"response_b": None}, "field 'response_b' must be str"),
])
def test_reader_validates(tmp_path, change, message):
    row = {"pair_id": "p", "order": "BA", "prompt": "q", "response_a": "x", "response_b": "y", "label": "A",
           "label_shown": "B", "kind": "chat", "source": "s", "schema_version": 1}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(row | change) + "\n")
    with pytest.raises(RowError, match=rf"t\.jsonl:2: {message}"):
        read_train_rows(path)
