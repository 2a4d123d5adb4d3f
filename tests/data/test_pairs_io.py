"""One pair reader (j1.data.pairs_io) behind every pair-reading command (issue 45, item 3): each form of
pair file goes through each command's loader and comes out as the same pair."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from j1.attack.runner import load_rows
from j1.cli.main import main
from j1.data.pairs_io import content_id, pair_from_row, read_pair_file, response_list
from j1.eval.benchmarks import get_benchmark, load_items
from j1.eval.consistency_run import load_response_sets
from j1.formats.base import request_text
from j1.schema import PairRecord, RowError
from j1.train.data import load_pairs

Q, GOOD, BAD = "What is 7*8?", "56", "54"
U = {"role": "user", "content": Q}

FORMS = {
    "plain": {"prompt": Q, "chosen": GOOD, "rejected": BAD},
    # TRL's standard form is the plain one; its datasets carry extra columns, which are ignored.
    "trl_standard": {"prompt": Q, "chosen": GOOD, "rejected": BAD, "score_chosen": 9.0, "score_rejected": 2.0},
    "trl_conversational": {"prompt": [U], "chosen": [{"role": "assistant", "content": GOOD}],
                           "rejected": [{"role": "assistant", "content": BAD}]},
    "trl_implicit_prompt": {"chosen": [U, {"role": "assistant", "content": GOOD}],
                            "rejected": [U, {"role": "assistant", "content": BAD}]},
    "j1_rows": {"id": "p7", "prompt": Q, "chosen": GOOD, "rejected": BAD, "kind": "math", "source": "gsm8k",
                "meta": {"x": 1}, "schema_version": 1},
}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _chosen_rejected(pair) -> tuple[str, str]:
    """A train.data.Pair (AB naming, ``label`` the better one) as (chosen, rejected)."""
    return (pair.response_a, pair.response_b) if pair.label == "A" else (pair.response_b, pair.response_a)


def _expected_id(form: str) -> str:
    return "p7" if form == "j1_rows" else content_id(Q, GOOD, BAD)


# --- every loader reads every form ---------------------------------------------------------------------

@pytest.mark.parametrize("form", sorted(FORMS))
def test_eval_and_attack_loader(tmp_path, form):
    path = _write(tmp_path / "p.jsonl", [FORMS[form]])
    (item,) = load_items(get_benchmark("generic"), str(path))
    assert (item.id, item.prompt, item.responses) == (_expected_id(form), Q, {"A": GOOD, "B": BAD})
    (row,) = load_rows(str(path))
    assert (row.id, row.prompt, row.chosen, row.rejected) == (_expected_id(form), Q, GOOD, BAD)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_train_warmup_probe_export_loader(tmp_path, form):
    # j1 train, j1 warmup, j1 probe and j1 export verl all read pairs with j1.train.data.load_pairs.
    (pair,) = load_pairs(_write(tmp_path / "p.jsonl", [FORMS[form]]))
    assert (pair.pair_id, pair.prompt, _chosen_rejected(pair)) == (_expected_id(form), Q, (GOOD, BAD))


@pytest.mark.parametrize("form", sorted(set(FORMS) - {"trl_implicit_prompt"}))  # consistency needs a prompt
def test_consistency_loader(tmp_path, form):
    (rs,) = load_response_sets(_write(tmp_path / "p.jsonl", [FORMS[form]]), k=2)
    assert (rs.prompt, rs.responses) == (Q, [GOOD, BAD])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_read_pair_file_keeps_j1_fields_and_defaults_the_rest(tmp_path, form):
    (rec,) = read_pair_file(_write(tmp_path / "mine.jsonl", [FORMS[form]]))
    want_kind, want_source = ("math", "gsm8k") if form == "j1_rows" else ("", "mine")
    assert (rec.kind, rec.source) == (want_kind, want_source)
    assert pickle.loads(pickle.dumps(rec)) == rec


def test_json_and_parquet_files_read_too(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "p.json").write_text(json.dumps([FORMS["plain"]]), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist([FORMS["plain"]]), tmp_path / "p.parquet")
    for name in ("p.json", "p.parquet"):
        (pair,) = load_pairs(tmp_path / name)
        assert _chosen_rejected(pair) == (GOOD, BAD)


def test_multi_turn_prompt_keeps_its_turns():
    turns = [{"role": "system", "content": "Be brief."}, U, {"role": "assistant", "content": "Times?"},
             {"role": "user", "content": "Yes."}]
    rec = pair_from_row({"prompt": turns, "chosen": GOOD, "rejected": BAD}, "f:1")
    assert rec.prompt == "system: Be brief.\n\nuser: What is 7*8?\n\nassistant: Times?\n\nuser: Yes."
    assert request_text(turns) == rec.prompt


def test_implicit_prompt_takes_the_shared_opening():
    a = {"role": "assistant", "content": "Times?"}
    u2 = {"role": "user", "content": "Yes."}
    row = {"chosen": [U, a, u2, {"role": "assistant", "content": GOOD}],
           "rejected": [U, a, u2, {"role": "assistant", "content": BAD}]}
    rec = pair_from_row(row, "f:1")
    assert (rec.prompt, rec.chosen, rec.rejected) == (request_text([U, a, u2]), GOOD, BAD)


def test_ids_come_from_content_and_differ_by_content():
    a = pair_from_row(FORMS["plain"], "f:1")
    b = pair_from_row(FORMS["trl_conversational"], "g:9")
    c = pair_from_row({"prompt": Q, "chosen": BAD, "rejected": GOOD}, "f:2")
    assert a.id == b.id != c.id
    assert pair_from_row({**FORMS["plain"], "id": 12}, "f:1").id == "12"


def test_response_list_forms():
    assert response_list("x", "chosen", "f:1") == ["x"]
    assert response_list(["x", "y"], "chosen", "f:1") == ["x", "y"]
    assert response_list([{"role": "assistant", "content": "x"}], "chosen", "f:1") == ["x"]


# --- bad rows fail in one line, naming file:line and the field ----------------------------------------

BAD_ROWS = [
    ({"prompt": Q, "chosen": GOOD}, ":2: missing field 'rejected'"),
    ({"chosen": GOOD, "rejected": BAD}, ":2: missing field 'prompt'"),
    ({"prompt": 3, "chosen": GOOD, "rejected": BAD}, ":2: field 'prompt' must be a string or a list of chat messages"),
    ({"prompt": [], "chosen": GOOD, "rejected": BAD}, ":2: field 'prompt' is an empty list"),
    ({"prompt": [{"role": "user"}], "chosen": GOOD, "rejected": BAD}, ":2: field 'prompt' message 1 must be"),
    ({"prompt": Q, "chosen": [U], "rejected": BAD}, ":2: field 'chosen' holds 'user' messages"),
    ({"prompt": Q, "chosen": None, "rejected": BAD}, ":2: field 'chosen' must be a string or a list"),
    ({"prompt": Q, "chosen": GOOD, "rejected": BAD, "kind": ["x"]}, ":2: field 'kind' must be a string"),
    ({"prompt": Q, "chosen": GOOD, "rejected": BAD, "meta": 3}, ":2: field 'meta' must be an object"),
    ({"chosen": [{"role": "assistant", "content": GOOD}], "rejected": [{"role": "assistant", "content": BAD}]},
     ":2: missing field 'prompt'"),
]


@pytest.mark.parametrize("row, msg", BAD_ROWS)
def test_bad_rows_name_file_line_and_field(tmp_path, row, msg):
    path = _write(tmp_path / "bad.jsonl", [FORMS["plain"], row])
    for load in (read_pair_file, load_pairs, lambda p: load_items(get_benchmark("generic"), str(p))):
        with pytest.raises(RowError) as exc:
            load(path)
        text = str(exc.value)
        assert text.startswith(f"{path}:2: ") and msg in text and "\n" not in text, text


def test_consistency_bad_response_list(tmp_path):
    path = _write(tmp_path / "bad.jsonl", [{"prompt": Q, "chosen": ["a", {"role": "assistant", "content": "b"}],
                                            "rejected": BAD}])
    with pytest.raises(RowError, match=r"bad.jsonl:1: field 'chosen' mixes strings"):
        load_response_sets(path, k=2)


def test_pair_record_type_is_j1s():
    assert isinstance(pair_from_row(FORMS["plain"], "f:1"), PairRecord)


# --- the commands end to end --------------------------------------------------------------------------

def test_export_verl_takes_a_trl_conversational_file(tmp_path, capsys):
    rows = [FORMS["trl_conversational"], {**FORMS["plain"], "prompt": "What is 6*7?", "chosen": "42", "rejected": "41"}]
    pairs = _write(tmp_path / "trl.jsonl", rows)
    out = tmp_path / "verl"
    assert main(["export", "verl", "--pairs", str(pairs), "--out", str(out)]) == 0, capsys.readouterr().err
    import pyarrow.parquet as pq

    table = pq.read_table(out / "trl.parquet").to_pylist()
    assert len(table) == 4  # two pairs, both orders
    assert {r["extra_info"]["pair_id"] for r in table} == {content_id(Q, GOOD, BAD), content_id("What is 6*7?", "42", "41")}
    assert any(Q in r["prompt"][-1]["content"] for r in table)


@pytest.mark.usefixtures("one_torch_thread")
def test_probe_takes_a_plain_file(tiny_model, tmp_path, capsys):
    pairs = _write(tmp_path / "plain.jsonl", [FORMS["plain"], {"prompt": "2+2?", "chosen": "4", "rejected": "5"}])
    out = tmp_path / "probe.json"
    rc = main(["probe", "--model", str(tiny_model), "--data", str(pairs), "--template", "compact",
               "--batch_size", "2", "--out", str(out), "--no_progress"])
    assert rc == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["all"]["pairs"] == 2


def test_criteria_and_reference_travel_with_the_pair(tmp_path):
    """A pair row's criteria (text, or a rubric object written out) and reference are read by the one loader, kept
    by j1's pair records and their mix rows, and left out of a record that has none (files read as before)."""
    from j1.runs.atomic import plain
    from j1.schema import both_orders, read_pairs

    rubric = {"criteria": "Exact?", "levels": [{"score": 10, "description": "Exact."}]}
    pair = pair_from_row({"prompt": "q", "chosen": "4", "rejected": "5", "criteria": rubric, "reference": "4"}, "f:1")
    assert (pair.criteria, pair.reference) == ("Exact?\nScore levels (0-10):\n10: Exact.", "4")
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps(plain(pair)) + "\n" + json.dumps(plain(PairRecord("p2", "q", "a", "b", "k", "s"))) + "\n")
    assert "criteria" not in path.read_text().splitlines()[1]  # unset: left out
    first, second = read_pairs(path)
    assert first == pair and (second.criteria, second.reference) == (None, None)
    rows = both_orders(first, 0)
    assert {(r.criteria, r.reference) for r in rows} == {(pair.criteria, "4")}
    with pytest.raises(RowError, match=r"f:2: field 'reference' must be a string, got int"):
        pair_from_row({"prompt": "q", "chosen": "a", "rejected": "b", "reference": 4}, "f:2")
    with pytest.raises(RowError, match=r"f:3: field 'criteria': levels\[0\]: score 11"):
        pair_from_row({"prompt": "q", "chosen": "a", "rejected": "b",
                       "criteria": {"criteria": "c", "levels": {11: "x"}}}, "f:3")
