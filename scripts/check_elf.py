"""Checks that a file is a static 64-bit little-endian Linux ELF executable for one architecture:
    python3 scripts/check_elf.py PATH amd64|arm64
Static means no program interpreter (PT_INTERP) and no dynamic section naming a library (DT_NEEDED):
the binary runs from an empty image. Used by scripts/release.sh; stdlib only."""

from __future__ import annotations

import struct
import sys

MACHINES = {"amd64": 62, "arm64": 183}  # EM_X86_64, EM_AARCH64
PT_INTERP, PT_DYNAMIC, DT_NEEDED = 3, 2, 1


def problems(data: bytes, arch: str) -> list[str]:
    if data[:4] != b"\x7fELF":
        return ["not an ELF file"]
    if data[4] != 2 or data[5] != 1:
        return ["not a 64-bit little-endian ELF file"]
    out = []
    e_type, e_machine = struct.unpack_from("<HH", data, 0x10)
    if e_machine != MACHINES[arch]:
        names = {v: k for k, v in MACHINES.items()}
        out.append(f"built for machine {e_machine} ({names.get(e_machine, 'another architecture')}), not {arch}")
    if e_type not in (2, 3):  # ET_EXEC, or ET_DYN for a static-pie
        out.append(f"ELF type {e_type} is not an executable")
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == PT_INTERP:
            interp = data[p_offset : p_offset + p_filesz].rstrip(b"\0").decode(errors="replace")
            out.append(f"dynamically linked: needs the loader {interp}")
        if p_type == PT_DYNAMIC:
            for j in range(0, p_filesz, 16):
                tag, _ = struct.unpack_from("<qQ", data, p_offset + j)
                if tag == DT_NEEDED:
                    out.append("dynamically linked: needs shared libraries (DT_NEEDED)")
                    break
                if tag == 0:
                    break
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in MACHINES:
        print(__doc__.strip().splitlines()[1].strip(), file=sys.stderr)
        return 2
    path, arch = argv[1], argv[2]
    with open(path, "rb") as f:
        found = problems(f.read(), arch)
    if found:
        print(f"{path}: " + "; ".join(found), file=sys.stderr)
        return 1
    print(f"{path}: a static {arch} ELF executable")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
