"""bench/gpu_parts.py: what travels to the GPU machine in parts. The arithmetic by hand; the split, the
stage in any order, the reassembly, and the failures (a corrupt, a missing, a foreign part) each with
one line."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MIB = 2**20


def _module():
    spec = importlib.util.spec_from_file_location("gpu_parts", REPO / "bench" / "gpu_parts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


P = _module()


@pytest.mark.parametrize("repo, limit, margin, room", [
    (9 * MIB, 64 * MIB, 8 * MIB, 47 * MIB),  # today's repository: 47 MiB a part
    (0, 100, 0, 100),
    (50, 100, 49, 1),
])
def test_part_room(repo, limit, margin, room):
    assert P.part_room(repo, limit, margin) == room


@pytest.mark.parametrize("repo, limit, margin", [(56 * MIB, 64 * MIB, 8 * MIB), (100, 100, 0), (101, 100, 0)])
def test_part_room_refuses_a_repository_that_fills_the_run(repo, limit, margin):
    with pytest.raises(P.PartError, match="leaves no room for a part"):
        P.part_room(repo, limit, margin)


@pytest.mark.parametrize("total, room, cut", [
    (120 * MIB, 47 * MIB, (3, 40 * MIB)),  # ceil(120/47) = 3 parts, 120/3 = 40 MiB each
    (94 * MIB, 47 * MIB, (2, 47 * MIB)),  # exactly two full parts
    (94 * MIB + 1, 47 * MIB, (3, 32_855_382)),  # one byte more: a third part; ceil(98,566,145 / 3)
    (10, 4, (3, 4)),  # 4 + 4 + 2
    (3, 4, (1, 3)),
])
def test_even_cut(total, room, cut):
    assert P.even_cut(total, room) == cut


def _bundle(root: Path) -> Path:
    src = root / "src"
    (src / "wheels").mkdir(parents=True)
    rng = random.Random(1)
    (src / "wheels" / "a-1-py3-none-any.whl").write_bytes(rng.randbytes(50_000))
    (src / "wheels" / "b-1-py3-none-any.whl").write_bytes(rng.randbytes(7_000))
    (src / "data").mkdir()
    (src / "data" / "x.jsonl").write_text('{"id": 1}\n')
    return src


def _same(src: Path, bundle: Path) -> bool:
    files = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    return files == sorted(p.relative_to(bundle) for p in bundle.rglob("*") if p.is_file()) and all(
        (src / f).read_bytes() == (bundle / f).read_bytes() for f in files)


def test_pack_stage_in_any_order_reassembles_the_files(tmp_path):
    src = _bundle(tmp_path)
    m = P.pack(src, tmp_path / "w", 25_000)
    # the tar (57 kB of files + headers + padding to 10 kB records) in 3 even parts of at most 25 kB
    assert m["parts"] == 3 and max(m["part_bytes"]) <= 25_000 and sum(m["part_bytes"]) == m["bundle_bytes"]
    assert max(m["part_bytes"]) - min(m["part_bytes"]) <= 2
    for k in (1, 2, 3):
        folder = tmp_path / "w" / f"part-{k}"
        assert json.loads((folder / P.MANIFEST).read_text()) == m  # every part carries the whole manifest
    to = tmp_path / "stage"
    assert "still to stage: 1, 2" in P.stage(3, tmp_path / "w", to)
    with pytest.raises(P.PartError, match=r"2 of 3 parts not staged yet \(missing: 1, 2\)"):
        P.require_bundle(to)
    P.stage(1, tmp_path / "w", to)
    line = P.stage(2, tmp_path / "w", to)
    assert "all 3 parts in place" in line and "every sum ok" in line
    assert _same(src, P.require_bundle(to))
    # staged again (a rerun of the last stage), it reassembles the same files
    P.stage(3, tmp_path / "w", to)
    assert _same(src, to / "bundle")


def test_a_corrupt_part_is_refused_and_not_kept(tmp_path):
    src = _bundle(tmp_path)
    P.pack(src, tmp_path / "w", 25_000)
    part = tmp_path / "w" / "part-2" / P.PART
    data = bytearray(part.read_bytes())
    data[0] ^= 1
    part.write_bytes(bytes(data))
    to = tmp_path / "stage"
    with pytest.raises(P.PartError, match=r"part 2 of 3 .*: sha256 .* is not the manifest's .*: the part is corrupt"):
        P.stage(2, tmp_path / "w", to)
    assert not any((to / "parts").iterdir())


def test_a_part_that_is_not_here_names_what_to_carry(tmp_path):
    src = _bundle(tmp_path)
    P.pack(src, tmp_path / "w", 25_000)
    with pytest.raises(P.PartError, match=r"part-4: no part 4 here; carry it with this run"):
        P.stage(4, tmp_path / "w", tmp_path / "stage")


def test_nothing_staged_says_how_to_begin(tmp_path):
    with pytest.raises(P.PartError, match="no bundle and no staged parts"):
        P.require_bundle(tmp_path)


def test_parts_of_a_new_prepare_replace_the_old_ones(tmp_path):
    src = _bundle(tmp_path)
    P.pack(src, tmp_path / "old", 25_000)
    to = tmp_path / "stage"
    for k in (1, 2, 3):
        P.stage(k, tmp_path / "old", to)
    (src / "data" / "x.jsonl").write_text('{"id": 2}\n')  # a new bundle
    P.pack(src, tmp_path / "new", 25_000)
    assert "still to stage: 2, 3" in P.stage(1, tmp_path / "new", to)  # the old parts and bundle are gone
    assert not (to / "bundle").exists()


def test_a_truncated_part_fails_its_sum(tmp_path):
    src = _bundle(tmp_path)
    P.pack(src, tmp_path / "w", 25_000)
    part = tmp_path / "w" / "part-1" / P.PART
    part.write_bytes(part.read_bytes()[:-10])
    with pytest.raises(P.PartError, match="the part is corrupt"):
        P.stage(1, tmp_path / "w", tmp_path / "stage")


def test_unpack_what_came_back(tmp_path):
    src = _bundle(tmp_path)
    P.pack(src, tmp_path / "out" / "state", 25_000)
    assert _same(src, P.unpack(tmp_path / "out" / "state", tmp_path / "here"))
    (tmp_path / "out2").mkdir()
    with pytest.raises(P.PartError, match="no part-K folders"):
        P.unpack(tmp_path / "out2", tmp_path / "here2")


def test_the_cli_fails_with_one_line(tmp_path, capsys):
    assert P.main(["ready", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpu_check: ") and "Traceback" not in err
