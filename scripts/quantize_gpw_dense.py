#!/usr/bin/python3
"""Usage: quantize_gpw_dense.py IN.gpw OUT.gpw REGEX GROUP (docs/memory.md, "Per-group scales and
8-bit dense layers"). Copies a .gpw and replaces, in place, each f32 dense weight ([out][in], name
ending in .weight) whose name matches REGEX by its int8 quantise-dequantise with symmetric scales
per output row (GROUP 0) or per row and group of ceil(in / ceil(in / GROUP)) inputs, as `gpen
convert --dense-dtype int8 --group-size GROUP` would store it. The file stays f32, so the CPU runs
the 8-bit weights' error for one chosen set of layers (the accuracy of each dense layer on its own).
"""
import json, re, shutil, struct, sys
import numpy as np
src, dst, pat, G = sys.argv[1], sys.argv[2], re.compile(sys.argv[3]), int(sys.argv[4])
shutil.copyfile(src, dst)
n = 0
with open(dst, "r+b") as f:
    hoff, hlen, doff = struct.unpack_from("<QQQ", f.read(64), 8)
    f.seek(hoff); h = json.loads(f.read(hlen))
    for t in h["tensors"]:
        if t["dtype"] != "f32" or len(t["shape"]) != 2 or not t["name"].endswith(".weight") or not pat.search(t["name"]):
            continue
        O, K = t["shape"]
        f.seek(doff + t["offset"]); a = np.frombuffer(f.read(t["bytes"]), dtype=np.float32).reshape(O, K)
        gs = K if G <= 0 or G >= K else -(-K // -(-K // G))
        out = np.empty_like(a)
        for k0 in range(0, K, gs):
            blk = a[:, k0:k0 + gs].astype(np.float64)
            s = (np.abs(blk).max(axis=1, keepdims=True) / 127.0).astype(np.float32)
            c = np.clip(np.rint(np.where(s > 0, blk / np.maximum(s, 1e-38), 0)), -127, 127).astype(np.float32)
            out[:, k0:k0 + gs] = c * s
        f.seek(doff + t["offset"]); f.write(out.tobytes()); n += 1
print("wrote", dst, "with", n, "dense weights quantised")
