"""Entry point of the two-process tests (test_two_process.py): j1's CLI as one process of an
``accelerate launch``, with the view of the process whose RANK is 1 skewed as ``J1_TEST_SKEW`` says:

- ``clock=K``: j1's stop-and-save clock (``j1.train.stopping``) runs K times as fast there (a clock
  that drifts, or a deadline that falls between the two processes' checks);
- ``stale_latest``: there, ``latest`` names the oldest complete checkpoint (a node whose local storage
  lags, or holds no trainer_state.json of the newer ones).

Only that process's view changes; what j1 decides from it must still be the same on both.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace


def skew(how: str) -> None:
    if how.startswith("clock="):
        from j1.train import stopping

        rate, start = float(how.split("=", 1)[1]), time.monotonic()
        stopping.time = SimpleNamespace(monotonic=lambda: start + (time.monotonic() - start) * rate)
    elif how == "stale_latest":
        from j1.train import recipe
        from j1.train.resume import whole_json

        def oldest(output_dir):
            found = sorted((int(p.name.split("-")[1]), str(p)) for p in Path(output_dir).glob("checkpoint-*")
                           if whole_json(p / "trainer_state.json"))
            return found[0][1] if found else None

        recipe.latest_checkpoint = oldest
    elif how:
        raise SystemExit(f"J1_TEST_SKEW={how!r}: clock=K or stale_latest")


if __name__ == "__main__":
    if os.environ.get("RANK") == "1":
        skew(os.environ.get("J1_TEST_SKEW", ""))
    from j1.cli.main import main

    sys.exit(main(sys.argv[1:]))
