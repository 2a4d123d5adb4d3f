"""``j1.schema``'s one pair record and its placed view: ``PlacedPair`` from a ``PairRecord`` (the seeded
coin) and from the ``TrainRow`` lines of ``j1 synth mix``, which must agree."""

from __future__ import annotations

import re

import pytest

from j1.schema import PairRecord, PlacedPair, RowError, TrainRow, both_orders, placed_pairs
from j1.train.data import Pair

# (pair id, seed, label): where the coin random.Random(f"{seed}:{id}") puts chosen. Pinned because a
# change would re-place every pair of every mix file already written (A: chosen is response_a).
PLACEMENTS = [
    ("id1", 0, "B"),
    ("id1", 1, "B"),
    ("p7", 0, "A"),
    ("x0", 3, "A"),
    ("é", 0, "B"),  # unicode id
    ("", 0, "B"),  # empty id
]


@pytest.mark.parametrize("pid, seed, label", PLACEMENTS)
def test_from_record_places_chosen_by_the_seeded_coin(pid, seed, label):
    placed = PlacedPair.from_record(PairRecord(pid, "q", "good", "bad", "chat", "s"), seed)
    a, b = ("good", "bad") if label == "A" else ("bad", "good")
    assert placed == PlacedPair(pid, "q", a, b, label, "chat")


@pytest.mark.parametrize("pid, seed, label", PLACEMENTS)
def test_both_orders_lines_show_the_placed_pair(pid, seed, label):
    record = PairRecord(pid, "q", "good", "bad", "chat", "src", {"m": 1})
    placed = PlacedPair.from_record(record, seed)
    ab, ba = both_orders(record, seed)
    # AB shows the placement as it is, BA swapped; label_shown follows the better response.
    assert (ab.order, ab.label_shown, ab.shown()) == ("AB", label, (placed.response_a, placed.response_b))
    assert (ba.order, ba.label_shown, ba.shown()) == ("BA", {"A": "B", "B": "A"}[label],
                                                      (placed.response_b, placed.response_a))
    assert ab.source == ba.source == "src"
    assert PlacedPair.from_train_row(ab) == PlacedPair.from_train_row(ba) == placed
    assert placed.train_rows(record.source) == [ab, ba]
    assert placed_pairs([ab, ba], "f") == [placed]


def test_a_row_read_back_keeps_the_placed_pair():
    # the line as a reader sees it (from_row validates label_shown against order)
    line = {"pair_id": "m1", "order": "BA", "prompt": "q", "response_a": "x", "response_b": "y", "label": "B",
            "label_shown": "A", "kind": "chat", "source": "s"}
    assert PlacedPair.from_train_row(TrainRow.from_row(line, "f:1")) == PlacedPair("m1", "q", "x", "y", "B", "chat")


def test_train_data_pair_is_the_placed_view():
    assert Pair is PlacedPair
    assert Pair("p1", "2+2?", "4", "5", "A").kind == ""  # positional, kind optional (probe, export verl)


def _rows(pid: str, *orders: str, prompt: str = "q") -> list[TrainRow]:
    rows = PlacedPair(pid, prompt, "x", "y", "A", "chat").train_rows("s")
    return [r for o in orders for r in rows if r.order == o]


@pytest.mark.parametrize("rows, expected", [
    (_rows("p1", "AB", "BA"), ["p1"]),
    (_rows("p1", "BA", "AB") + _rows("p2", "AB", "BA"), ["p1", "p2"]),  # first-seen order, either order first
    (_rows("p2", "AB") + _rows("p1", "AB", "BA") + _rows("p2", "BA"), ["p2", "p1"]),  # orders need not be adjacent
])
def test_placed_pairs(rows, expected):
    assert [p.pair_id for p in placed_pairs(rows, "f")] == expected


@pytest.mark.parametrize("rows, message", [
    (_rows("p1", "AB"), "f: pair 'p1' has only order ['AB']; need AB and BA"),
    (_rows("p1", "AB", "AB"), "f: pair id 'p1' appears twice in order AB"),
    (_rows("p1", "AB") + _rows("p1", "BA", prompt="other"), "f: the two orders of pair 'p1' disagree on the pair"),
])
def test_placed_pairs_errors(rows, message):
    with pytest.raises(RowError, match=re.escape(message)):
        placed_pairs(rows, "f")
