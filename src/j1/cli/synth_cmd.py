"""``j1 synth math|chat|mismatch|mix``: make training pairs, then mix them into the training input.

- ``j1 synth math --source S --samples N --out FILE``: verified right-vs-wrong math pairs.
- ``j1 synth chat --source S --out FILE``: answer to x vs answer to a subtly changed x'.
- ``j1 synth mismatch --source S --out FILE``: a question's gold answer vs another question's (no model).
- ``j1 synth thoughts --pairs P --out FILE``: a thought per order beside each pair (why it has its winner).
- ``j1 synth mix --inputs A.jsonl:N B.jsonl --out-dir DIR``: train/held-out rows, both orders.

The generators resume: rerunning the same command over an existing ``--out`` skips every prompt
already finished (see :mod:`j1.data.store`); the runs themselves are ``j1.data.synth``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from j1.cli.common import build_backend, check_hub_inputs, parse, removed_on_error, setup_logging
from j1.data.spec import MixSpec, SynthChatSpec, SynthMathSpec, SynthMismatchSpec, ThoughtsSpec

SUBCOMMANDS = {
    "math": "verified math pairs: N sampled solutions, a right one vs a wrong one",
    "chat": "chat pairs: the answer to x vs the answer to a subtly changed x', with noise checks",
    "mismatch": "a question's gold answer vs another question's gold answer (no model; GSM8K-style sources)",
    "thoughts": "a checkable thought per order beside each pair: why it has its winner (or a --teacher's, checked)",
    "mix": "mix pair files in given amounts; held-out split by prompt; both orders of every pair",
}
CONFIGS = {"math": SynthMathSpec, "chat": SynthChatSpec, "mismatch": SynthMismatchSpec, "thoughts": ThoughtsSpec,
           "mix": MixSpec}


def usage() -> str:
    rows = "\n".join(f"  {name:<9} {help_}" for name, help_ in SUBCOMMANDS.items())
    return f"usage: j1 synth {{{','.join(SUBCOMMANDS)}}} [options]   (j1 synth SUB --help)\n\n{rows}\n"


def main(argv: Sequence[str]) -> int:
    from j1.data.synth import summary_line, thoughts_summary, verifier

    argv = list(argv)
    if not argv or argv[0] in {"-h", "--help", "help"}:
        sys.stdout.write(usage())
        return 0
    sub, rest = argv[0], argv[1:]
    if sub not in SUBCOMMANDS:
        sys.stderr.write(f"j1 synth: unknown subcommand {sub!r}\n\n{usage()}")
        return 2
    prog = f"j1 synth {sub}"
    cfg = parse(CONFIGS[sub], rest, prog=prog)
    check_hub_inputs(cfg)  # an uncached hub id, offline: one line now, not after a minute of retries
    setup_logging()
    # Only the CLI reads environment variables: the generator's key and the verifying judge's.
    verify_key = os.environ.get(cfg.api_key_env) if sub == "chat" and cfg.verify_base_url else None
    if sub == "thoughts":
        teacher_key = os.environ.get(cfg.teacher_key_env) if cfg.teacher else None
        with removed_on_error(Path(cfg.out).parent):
            print(thoughts_summary(cfg, teacher_key))
        return 0
    # A failed start leaves no empty folder (a resumable store with pairs in it stays).
    with removed_on_error(cfg.out_dir if sub == "mix" else Path(cfg.out).parent):
        print(summary_line(sub, cfg, lambda: build_backend(cfg), lambda: verifier(cfg, verify_key)))
    return 0
