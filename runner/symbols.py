"""Why a module's sampled frames have no names, said once in words instead of showing hex.

A symbolizer (perf, or the server's `addressToSymbol`) names a function from the module's full
symbol table (`.symtab`), from its exported symbols (`.dynsym`), or from separate debug symbols
found by build id. A stripped library keeps only the exported ones: 9,114 functions of
libclickhouse.so 18.16, 15 of the chdb engine's 26.9 library. This module reads the ELF
section headers (no dependency) of the modules a profile's unnamed frames came from, while
the server still runs.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

DEBUG_ROOT = Path("/usr/lib/debug")  # where perf and gdb look for separate debug symbols
_ELF_MAGIC = b"\x7fELF"
_SHT_SYMTAB, _SHT_DYNSYM, _SHT_NOTE = 2, 11, 7
_STT_FUNC, _SHN_UNDEF = 2, 0
_NT_GNU_BUILD_ID = 3


@dataclass(frozen=True)
class ModuleSymbols:
    path: str
    symtab: bool  # a full symbol table: every function has its name
    exported_functions: int  # functions defined in .dynsym: all a stripped module names
    build_id: str  # hex; "" when the module has none

    @property
    def debug_file(self) -> str:
        """Where separate debug symbols of this build would be installed ("" without a build
        id)."""
        if not self.build_id:
            return ""
        return str(DEBUG_ROOT / ".build-id" / self.build_id[:2] / f"{self.build_id[2:]}.debug")


@dataclass(frozen=True)
class _Section:
    name: str
    kind: int
    offset: int
    size: int
    entsize: int


def read_module_symbols(path: Path) -> ModuleSymbols | None:
    """What the module at `path` holds for a symbolizer; None if it is not a readable 64-bit
    ELF file."""
    try:
        with path.open("rb") as f:
            sections, order = _sections(f)
            symtab = any(s.kind == _SHT_SYMTAB and s.size for s in sections)
            exported = sum(_functions(f, s, order) for s in sections if s.kind == _SHT_DYNSYM)
            notes = [s for s in sections if s.kind == _SHT_NOTE and s.name == ".note.gnu.build-id"]
            build_id = _build_id(f, notes[0], order) if notes else ""
    except (OSError, ValueError, struct.error):
        return None
    return ModuleSymbols(str(path), symtab, exported, build_id)


def _sections(f: BinaryIO) -> tuple[list[_Section], str]:
    header = f.read(64)
    if header[:4] != _ELF_MAGIC or header[4] != 2:  # ELFCLASS64 only
        raise ValueError("not a 64-bit ELF file")
    order = "<" if header[5] == 1 else ">"
    (shoff,) = struct.unpack_from(order + "Q", header, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", header, 0x3A)
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    raw = [struct.unpack_from(order + "IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
    f.seek(raw[shstrndx][4])
    names = f.read(raw[shstrndx][5])
    sections = []
    for name, kind, _flags, _addr, offset, size, _link, _info, _align, entsize in raw:
        text = names[name : names.index(b"\0", name)].decode("ascii", "replace")
        sections.append(_Section(text, kind, offset, size, entsize))
    return sections, order


def _functions(f: BinaryIO, section: _Section, order: str) -> int:
    """Defined function symbols of a symbol table section (Elf64_Sym entries)."""
    if section.entsize != 24:
        return 0
    f.seek(section.offset)
    data = f.read(section.size - section.size % 24)
    return sum(
        1
        for _name, info, _other, shndx, _value, _size in struct.iter_unpack(order + "IBBHQQ", data)
        if info & 0xF == _STT_FUNC and shndx != _SHN_UNDEF
    )


def _build_id(f: BinaryIO, section: _Section, order: str) -> str:
    f.seek(section.offset)
    data = f.read(section.size)
    namesz, descsz, kind = struct.unpack_from(order + "III", data, 0)
    if kind != _NT_GNU_BUILD_ID:
        return ""
    start = 12 + (namesz + 3) // 4 * 4
    return data[start : start + descsz].hex()


def module_paths(pid: int) -> dict[str, Path]:
    """The files mapped into a running process, by base name (how folded frames name them)."""
    paths: dict[str, Path] = {}
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return paths
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            path = Path(fields[5].removesuffix(" (deleted)"))
            paths.setdefault(path.name, path)
    return paths


def why_unnamed(module: ModuleSymbols) -> str:
    """One sentence: why frames of this module have no names, and what would name them."""
    name = os.path.basename(module.path)
    if module.symtab:
        return (
            f"{name} has a symbol table: its unnamed frames are code outside any function "
            "symbol (stubs, JIT code)"
        )
    if module.debug_file and Path(module.debug_file).is_file():
        return (
            f"{name} is stripped, and its debug symbols ({module.debug_file}) are installed "
            "but did not name these frames"
        )
    remedy = (
        f"its debug symbols at {module.debug_file} would name them"
        if module.debug_file
        else "an unstripped build would name them"
    )
    return (
        f"{name} ({module.path}) is stripped: no symbol table, only its "
        f"{module.exported_functions} exported functions have names, the others are drawn "
        f"as [{name}]; {remedy}"
    )
