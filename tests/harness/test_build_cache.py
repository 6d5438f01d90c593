"""The build cache is verified, not trusted: a damaged or planted entry is rebuilt, never an error."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import HAS_NVCC

from kernelseek.harness import guard
from kernelseek.harness.build import TARGETS, build_kernel

ARCHS = ["cpu", pytest.param("sm90", marks=pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc"))]


def kernel(folder: Path, arch: str, name: str) -> Path:
    path = folder / f"{name}{TARGETS[arch]['suffix']}"
    path.write_text(f'extern "C" int {name}() {{ return 1; }}\n')
    return path


def build(path: Path, arch: str, **kwargs):
    return build_kernel(path, arch, cache_dir=path.parent / "cache", **kwargs)


def rebuilt(path: Path, arch: str, name: str) -> Path:
    built = build(path, arch, entry_point=name)
    assert not built.cached
    library = Path(built.library)
    record = json.loads((library.parent / "build.json").read_text())
    assert record["files"]["kernel.so"]["sha256"] == guard_digest(library)
    assert name in guard.exported_symbols(library)
    return library


def guard_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("arch", ARCHS)
def test_an_unchanged_entry_is_used(tmp_path, arch):
    path = kernel(tmp_path, arch, "ks_a")
    first = build(path, arch)
    again = build(path, arch, entry_point="ks_a")
    assert not first.cached and again.cached and again.library == first.library


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_a_planted_library_is_rebuilt_from_the_recorded_source(tmp_path, arch):
    good, other = kernel(tmp_path, arch, "ks_a"), kernel(tmp_path, arch, "ks_b")
    library = Path(build(good, arch).library)
    shutil.copyfile(build(other, arch).library, library)
    assert rebuilt(good, arch, "ks_a") == library
    assert "ks_b" not in guard.exported_symbols(library)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("record", ["", "{not json", "[]", '{"files": {}}'])
def test_a_garbled_build_json_is_a_miss(tmp_path, arch, record):
    path = kernel(tmp_path, arch, "ks_a")
    library = Path(build(path, arch).library)
    (library.parent / "build.json").write_text(record)
    rebuilt(path, arch, "ks_a")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("damage", ["truncated", "missing", "object"])
def test_a_truncated_or_missing_file_is_rebuilt(tmp_path, arch, damage):
    path = kernel(tmp_path, arch, "ks_a")
    library = Path(build(path, arch).library)
    if damage == "truncated":
        library.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
    elif damage == "missing":
        library.unlink()
    else:
        (library.parent / "kernel.o").write_bytes(b"")
    rebuilt(path, arch, "ks_a")
