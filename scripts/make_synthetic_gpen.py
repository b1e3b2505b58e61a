#!/usr/bin/python3
"""Writes a GPEN checkpoint in the official layout with random (seeded) weights: a stand-in for
GPEN-BFR-*.pth when the real ones are not present. Its outputs are not restorations; it exists so
the whole pipeline can run and be measured. Usage: make_synthetic_gpen.py OUT.pth [--size 256]"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import torch  # noqa: E402
from gpen_reference import random_state_dict  # noqa: E402

OFFICIAL = {256: (1, 0.5), 512: (2, 1.0), 1024: (2, 1.0)}

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("out")
ap.add_argument("--size", type=int, default=256, choices=sorted(OFFICIAL))
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()
cm, narrow = OFFICIAL[a.size]
sd = random_state_dict(a.size, cm, narrow, a.seed)
tmp = a.out + ".tmp"
torch.save(sd, tmp)
os.replace(tmp, a.out)
print(f"wrote {a.out}: synthetic GPEN-BFR-{a.size} layout (random weights, seed {a.seed})")
