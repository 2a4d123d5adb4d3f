"""Spec of ``j1 export verl``: training pairs as parquet in verl's RL dataset schema."""

from __future__ import annotations

from dataclasses import dataclass, field

from j1.formats.spec import check_template, template_field
from j1.rewards.core import FORMULATIONS
from j1.train.options import check_choice


@dataclass
class ExportVerlSpec:
    """``j1 export verl``: pairs (both orders) as verl RL-dataset parquet, rewarded by
    ``j1.integrations.verl.compute_score``."""

    pairs: list[str] | None = field(
        default=None,
        metadata={"help": "Pair files: `j1 synth mix` rows (both orders) or chosen/rejected pairs; each becomes "
                  "OUT/<file stem>.parquet (e.g. train.jsonl and heldout.jsonl)."},
    )
    format: str = field(
        default="pav", metadata={"help": f"Judge formulation: {', '.join(FORMULATIONS)} (multitask = pas + pos)."}
    )
    out: str | None = field(default=None, metadata={"help": "Output folder: one parquet per pair file, and run.json."})
    template: str = template_field()
    data_source: str = field(
        default="j1", metadata={"help": "verl's data_source column (verl groups validation metrics by it); the "
                                "judge format is appended: j1/pav."},
    )
    pair_seed: int = field(
        default=0, metadata={"help": "Seed of the side the chosen response is placed on (chosen/rejected input)."}
    )
    max_pairs: int | None = field(default=None, metadata={"help": "Export at most this many pairs per file."})

    def __post_init__(self) -> None:
        check_choice("format", self.format, FORMULATIONS)
        check_template(self.template)
        if not self.pairs or not self.out:
            raise ValueError("j1 export verl needs --pairs FILE [FILE ...] and --out DIR")
        stems = [p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in self.pairs]
        if len(set(stems)) != len(stems):
            raise ValueError(f"--pairs {self.pairs}: two files share a name, so their parquet files would collide")
        if self.max_pairs is not None and self.max_pairs < 1:
            raise ValueError(f"--max_pairs {self.max_pairs}: must be >= 1 (or unset)")
