#!/usr/bin/python3
"""Usage: round_gpw_weights.py IN_F32.gpw OUT.gpw bf16|fp16 (docs/memory.md, "8-bit weights").
Copies an f32 .gpw and rounds, in place, the tensors `gpen convert --dtype bf16|fp16` would store
in that dtype (rank >= 2, name ending in .weight) to bf16 / fp16 and back: same header, same
layout, so the CPU (fp32 only) can run "bf16 weights" for a like-for-like accuracy figure.
"""
import json, shutil, struct, sys
import numpy as np
src, dst, kind = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.copyfile(src, dst)
with open(dst, "r+b") as f:
    pre = f.read(64)
    hoff, hlen, doff = struct.unpack_from("<QQQ", pre, 8)
    f.seek(hoff); h = json.loads(f.read(hlen))
    for t in h["tensors"]:
        if t["dtype"] != "f32" or len(t["shape"]) < 2 or not t["name"].endswith(".weight"): continue
        f.seek(doff + t["offset"]); a = np.frombuffer(f.read(t["bytes"]), dtype=np.float32).copy()
        if kind == "bf16":
            u = a.view(np.uint32).astype(np.uint64)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
            a = u.astype(np.uint32).view(np.float32)
        else:
            a = a.astype(np.float16).astype(np.float32)
        f.seek(doff + t["offset"]); f.write(a.tobytes())
print("wrote", dst)
