"""Let llama-cpp-py-sync's libraries load on glibc 2.36 (Debian 12, this project's machines).

The wheel is tagged manylinux2014 but was linked on a newer system: its libraries require
GLIBC_2.38 for exactly four functions, the C23 variants `__isoc23_strtol`, `_strtoul`,
`_strtoull` and `__isoc23_sscanf` (they differ from the classic ones only in accepting
`0b` binary literals). This rewrites each of those undefined dynamic symbols to the
classic name (the string already sits inside the C23 one, so only an offset changes),
drops their version requirement, and marks the GLIBC_2.38 requirement weak, so the loader
accepts the library and binds the classic functions. Nothing is compiled; the files are
patched in place and the patch is idempotent.
"""
from __future__ import annotations

import struct
from pathlib import Path

SHT_DYNSYM = 11
SHT_GNU_VERSYM = 0x6FFFFFFF
SHT_GNU_VERNEED = 0x6FFFFFFE
VER_FLG_WEAK = 0x2
VER_NDX_GLOBAL = 1
C23_TO_CLASSIC = {"__isoc23_strtol": "strtol", "__isoc23_strtoul": "strtoul",
                  "__isoc23_strtoull": "strtoull", "__isoc23_sscanf": "sscanf"}
NEWER_GLIBC = ("GLIBC_2.38", "GLIBC_2.39")


class ElfError(ValueError):
    pass


def patch(path: Path) -> int:
    """Patch one shared library; returns how many entries changed (0: nothing to do)."""
    data = bytearray(path.read_bytes())
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path} is not a little-endian 64-bit ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for index in range(shnum):
        (_, kind, _, _, offset, size, link, info, _, _) = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + index * shentsize)
        sections.append({"type": kind, "offset": offset, "size": size, "link": link,
                         "info": info})
    dynsym = next((s for s in sections if s["type"] == SHT_DYNSYM), None)
    if dynsym is None:
        return 0
    strtab = sections[dynsym["link"]]["offset"]
    versym = next((s for s in sections if s["type"] == SHT_GNU_VERSYM), None)
    verneed = next((s for s in sections if s["type"] == SHT_GNU_VERNEED), None)

    def name_at(offset: int) -> str:
        start = strtab + offset
        return data[start:data.index(b"\0", start)].decode("ascii", "replace")

    changed = 0
    for index in range(dynsym["size"] // 24):
        entry = dynsym["offset"] + index * 24
        st_name, _, _, st_shndx = struct.unpack_from("<IBBH", data, entry)
        name = name_at(st_name)
        classic = C23_TO_CLASSIC.get(name)
        if classic is None or st_shndx != 0:  # only undefined references are renamed
            continue
        struct.pack_into("<I", data, entry, st_name + len(name) - len(classic))
        if versym is not None:
            struct.pack_into("<H", data, versym["offset"] + index * 2, VER_NDX_GLOBAL)
        changed += 1
    if verneed is not None:
        changed += _weaken(data, verneed, name_at)
    if changed:
        path.write_bytes(bytes(data))
    return changed


def _weaken(data: bytearray, verneed: dict, name_at) -> int:  # type: ignore[no-untyped-def]
    changed, offset = 0, verneed["offset"]
    for _ in range(verneed["info"]):
        _, count, _, aux, following = struct.unpack_from("<HHIII", data, offset)
        aux_offset = offset + aux
        for _ in range(count):
            _, flags, _, name, aux_next = struct.unpack_from("<IHHII", data, aux_offset)
            if name_at(name) in NEWER_GLIBC and not flags & VER_FLG_WEAK:
                struct.pack_into("<H", data, aux_offset + 4, flags | VER_FLG_WEAK)
                changed += 1
            if not aux_next:
                break
            aux_offset += aux_next
        if not following:
            break
        offset += following
    return changed


def patch_directory(directory: Path) -> int:
    return sum(patch(p) for p in sorted(directory.glob("*.so*")) if p.is_file()
               and not p.is_symlink())
