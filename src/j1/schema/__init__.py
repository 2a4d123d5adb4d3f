"""Record types and the only JSONL reader in j1 (``j1.runs.atomic`` writes the files).

Every artefact line carries ``schema_version``. Readers validate line by line and raise
``ValueError("path:lineno: ...")`` naming the field, so a malformed row is found at once. A crash
loses at most the line being written, which the reader of a resumed run discards (a torn last line
is the only tolerated defect, see ``iter_jsonl``).

A pair with a known winner has one record, :class:`PairRecord` (prompt, chosen, rejected, as ``j1 synth``
writes it); the other pair types are views of it, each where it must differ:

- :class:`PlacedPair` (``j1.train.data.Pair``): the record with its responses placed as A and B by a
  seeded coin and ``label`` naming the better one, so train, probe and export never assume chosen is A.
- :class:`TrainRow`: a placed pair shown in one order, a line of ``j1 synth mix`` (its file format).
- ``j1.attack.attacks.AttackPair``: a record's chosen answer against an attack on its rejected one,
  whose text may depend on the letter it is shown as.
- ``j1.eval.items.Item``: a benchmark item, which may hold more than two responses (RM-Bench's 3x3).
- ``j1.serve.protocol.Task``: a request to judge, with no known winner (``response_b`` None: score one).

``rows``: the readers and field checks; ``pair_records``: the pair record and its views; ``judgment_records``:
what judging writes. It may import only the floors below it (``j1.formats.base``, ``j1.pairs``); every layer
above imports it, by the names below.
"""

from j1.schema.judgment_records import JudgmentLine, ResultRecord, read_results
from j1.schema.pair_records import (
    Dropped,
    PairRecord,
    PlacedPair,
    TrainRow,
    both_orders,
    placed_pairs,
    read_pairs,
    read_train_rows,
)
from j1.schema.rows import (
    SCHEMA_VERSION,
    RowError,
    input_fields,
    iter_jsonl,
    meta_field,
    read_json_rows,
    require,
    row_version,
    string_fields,
)

__all__ = [
    "SCHEMA_VERSION", "Dropped", "JudgmentLine", "PairRecord", "PlacedPair", "ResultRecord", "RowError", "TrainRow",
    "both_orders", "input_fields", "iter_jsonl", "meta_field", "placed_pairs", "read_json_rows", "read_pairs",
    "read_results", "read_train_rows", "require", "row_version", "string_fields",
]
