#!/usr/bin/env python3
"""Fails when an AVX-512 object file defines a weak symbol outside its own namespaces.

The AVX-512 copies of the hot CPU kernels (kernels/cpu/isa.h) are compiled with AVX-512 flags.
An inline function or template they instantiate outside their namespace (std::, or Eigen under
its own name) is a weak symbol the linker may pick for the whole program, so AVX-512
instructions would run on the AVX2 path and fault on a CPU without them. Usage:
scripts/check_isa_symbols.py OBJECT...; exit 1 when such a symbol is found.
"""
import subprocess
import sys

OWN = ("isa_avx512", "gpen_eigen_avx512")
# Weak data that holds no code.
HARMLESS = ("DW.ref.__gxx_personality_v0",)


def main():
    bad = []
    for obj in sys.argv[1:]:
        out = subprocess.run(["nm", "-C", "--defined-only", obj], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in ("W", "V", "u", "w", "v"):
                continue
            name = parts[2]
            if any(o in name for o in OWN) or name in HARMLESS:
                continue
            bad.append(f"{obj}: weak symbol outside the ISA namespaces: {name}")
    for b in bad:
        print("check_isa_symbols: " + b)
    print(f"check_isa_symbols: {len(sys.argv) - 1} object(s), {len(bad)} stray weak symbol(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
