"""Writing files so that a crash never leaves one half-written: whole files go to a temp file beside
the target and are renamed onto it; long jobs append one flushed line per finished record
(``JsonlAppender``), after cutting off a torn last line a killed writer left. Reading and validating
those files is ``j1.schema``'s."""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def dumps(obj: Any) -> str:
    """One JSONL line (no newline). Dataclasses and enums serialise as plain JSON."""
    return json.dumps(plain(obj), ensure_ascii=False)


def plain(obj: Any) -> Any:
    """``obj`` as plain JSON values: dataclasses and mappings as dicts, tuples as lists, paths as strings,
    enums as their values.

    >>> from j1.schema import PairRecord
    >>> sorted(plain(PairRecord("i", "q", "a", "b", "math", "s", reference="4")))[:4]
    ['chosen', 'id', 'kind', 'meta']
    >>> "criteria" in plain(PairRecord("i", "q", "a", "b", "math", "s")), plain(PairRecord("i", "q", "a", "b", "m", "s",
    ...     reference="4"))["reference"]
    (False, '4')
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        # A record's optional fields added after its files existed are left out when unset, so a file
        # without them is written as before (``OMITTED_WHEN_NONE``: PairRecord's criteria, reference).
        omitted = getattr(obj, "OMITTED_WHEN_NONE", ())
        return {k: plain(v) for k, v in dataclasses.asdict(obj).items() if not (k in omitted and v is None)}
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: 0o666 less the process umask (0o644 under umask 022).

    >>> new_file_mode() & ~0o777
    0
    """
    try:  # Linux states the umask; reading it there changes nothing
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def temp_file_beside(path: str | os.PathLike, suffix: str = ".tmp") -> tuple[int, str]:
    """``(fd, name)`` of a new temp file in ``path``'s folder, to be renamed onto ``path``.

    ``tempfile.mkstemp`` makes it 0600; it gets the mode a plain new file would have, so a file
    written through a temp and rename has the same mode as every other file of the run.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.fchmod(fd, new_file_mode())
    return fd, tmp


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_file_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temps(path: str | os.PathLike) -> None:
    """Remove the temp files of ``write_text_atomic(path)`` that a killed writer left behind. Call it
    where one run owns ``path`` (as it starts), never while another process may be writing it."""
    path = Path(path)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    write_text_atomic(path, json.dumps(plain(obj), ensure_ascii=False, indent=2) + "\n")


def write_jsonl_atomic(path: str | os.PathLike, rows: Iterable[Any]) -> int:
    """Write all rows at once (temp + rename); returns the row count."""
    lines = [dumps(r) for r in rows]
    write_text_atomic(path, "".join(line + "\n" for line in lines))
    return len(lines)


class JsonlAppender:
    """Append finished records one line at a time, flushed and fsynced, for crash-safe long jobs.

    If the file ends in a torn line (a crash mid-write), that fragment is cut off first so new
    lines never glue onto it.
    """

    def __init__(self, path: str | os.PathLike, *, fsync: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _truncate_torn_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")
        self._fsync = fsync

    def write(self, record: Any) -> None:
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _truncate_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1  # 0 when the only line is torn
        log.warning("%s: dropping a torn last line left by an interrupted run", path)
        fh.truncate(cut)
