"""Why profiled frames have no names: the ELF files of the two real servers, the folded stacks
of a real profile, the modules of a running process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from artifacts.folded import frame_names, unnamed_module
from report.flamegraph import normalize_folded
from runner.profiler import NO_MODULE_NOTE, unnamed_notes
from runner.symbols import module_paths, read_module_symbols, why_unnamed
from tests.conftest import DATA, REPO

LIBCLICKHOUSE = Path("/lib/x86_64-linux-gnu/libclickhouse.so.18.16.1")
ENGINE = Path(sys.prefix) / "lib" / "python3.11" / "site-packages" / "chdb" / "_chdb.abi3.so"
REAL = DATA / "report_flame_runs"


@pytest.mark.parametrize(
    ("frame", "module"),
    [
        ("DB::Aggregator::execute", None),
        ("[thread start]", None),
        ("[libclickhouse.so.18.16.1]", "libclickhouse.so.18.16.1"),
        ("[libclickhouse.so.18.16.1 <18c4f00>]", "libclickhouse.so.18.16.1"),
        ("[unknown]", ""),
        ("0x7f3a2b1c4d5e", ""),
        ("", ""),
        ("operator[]", None),
    ],
)
def test_frames_without_a_function_name_are_told_by_their_module(
    frame: str, module: str | None
) -> None:
    assert unnamed_module(frame) == module


def test_named_frames_are_counted_per_sample() -> None:
    names = frame_names(["a;[libx.so];b 3\n", "[unknown];c 1\n", "not a stack\n"])
    assert (names.frames, names.named) == (11, 7)
    assert names.unnamed_by_module == (("libx.so", 3), ("", 1))
    assert names.named_share == 7 / 11
    threads = frame_names(["a;[libx.so];b 3\n"], thread_first=True)
    assert (threads.frames, threads.named) == (6, 3)


@pytest.mark.skipif(not LIBCLICKHOUSE.is_file(), reason="the 18.16 package is not installed")
def test_the_1816_library_is_stripped_to_its_exported_functions() -> None:
    symbols = read_module_symbols(LIBCLICKHOUSE)
    assert symbols is not None
    assert not symbols.symtab
    assert symbols.exported_functions > 5000  # `nm -D --defined-only` counts 9114 here
    assert len(symbols.build_id) == 40
    assert symbols.debug_file == (
        f"/usr/lib/debug/.build-id/{symbols.build_id[:2]}/{symbols.build_id[2:]}.debug"
    )
    text = why_unnamed(symbols)
    assert "libclickhouse.so.18.16.1" in text and "is stripped" in text
    assert f"{symbols.exported_functions} exported functions" in text


@pytest.mark.skipif(not ENGINE.is_file(), reason="chdb is not installed")
def test_the_engine_library_names_almost_nothing() -> None:
    symbols = read_module_symbols(ENGINE)
    assert symbols is not None
    assert not symbols.symtab and symbols.exported_functions < 100


def test_a_file_that_is_not_elf_has_no_symbol_information(tmp_path: Path) -> None:
    (tmp_path / "x.so").write_bytes(b"\x7fELF" + b"\0" * 10)  # truncated
    assert read_module_symbols(tmp_path / "x.so") is None
    assert read_module_symbols(REPO / "README.md") is None
    assert read_module_symbols(tmp_path / "missing.so") is None


def test_the_modules_of_a_running_process_are_found_by_name() -> None:
    paths = module_paths(os.getpid())
    python = Path(os.path.realpath(sys.executable))
    assert paths[python.name] == python
    assert module_paths(2**22 + 1) == {}  # no such process


@pytest.mark.skipif(not LIBCLICKHOUSE.is_file(), reason="the 18.16 package is not installed")
def test_a_real_profile_names_the_stripped_module_once() -> None:
    folded = REAL / "reference.folded"
    notes = unnamed_notes(folded, "perf", {LIBCLICKHOUSE.name: LIBCLICKHOUSE})
    assert len(notes) == 1 and notes[0].startswith("libclickhouse.so.18.16.1 (")
    assert unnamed_notes(folded, "perf", {}) == ()  # modules the server does not map


@pytest.mark.skipif(not ENGINE.is_file(), reason="chdb is not installed")
def test_the_engines_frames_are_explained_and_drawn_as_its_module() -> None:
    folded = REAL / "engine-26.9.folded"
    notes = unnamed_notes(folded, "perf", {ENGINE.name: ENGINE})
    assert notes[0] == NO_MODULE_NOTE
    assert notes[1].startswith("_chdb.abi3.so (") and "is stripped" in notes[1]
    stacks = dict(normalize_folded(folded.read_text().splitlines()).stacks)
    assert stacks["HTTPHandler;[_chdb.abi3.so]"] > sum(stacks.values()) / 2
