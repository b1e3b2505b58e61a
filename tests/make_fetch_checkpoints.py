#!/usr/bin/python3
"""Writes stand-ins for the official GPEN-BFR-256.pth and RetinaFace-R50.pth into OUT: every
tensor name and shape of the official layouts (tests/reference), random or zero values. The
`gpen fetch` tests serve them from a loopback server under the official names.
Usage: make_fetch_checkpoints.py OUT"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import torch  # noqa: E402
from gpen_reference import random_state_dict  # noqa: E402
from official_layout import retinaface_layout  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(sd, name):
    tmp = os.path.join(out, name + ".tmp")
    torch.save(sd, tmp)
    os.replace(tmp, os.path.join(out, name))


save(random_state_dict(256, 1, 0.5, seed=1), "GPEN-BFR-256.pth")
g = torch.Generator().manual_seed(2)
r50 = {}
for name, shape, kind in retinaface_layout("resnet50"):
    if kind == "int":
        r50[name] = torch.zeros(shape, dtype=torch.int64)
    elif name.endswith("running_var"):
        r50[name] = torch.ones(shape)
    else:
        r50[name] = torch.randn(shape, generator=g) * 0.01
save(r50, "RetinaFace-R50.pth")
