#!/usr/bin/python3
"""Writes tests/fixtures/codeformer/ with the official CodeFormer network (codeformer_arch.py and
vqgan_arch.py, loaded as tests/reference/make_transformer_fixtures.py loads them).

CodeFormer's constructor fixes its VQGAN (512 x 512, nf 64, ch_mult 1 2 2 4 4 8): a checkpoint is
~300 MB however small the transformer, too big to store. So the weights are a function of the
tensor's name and the element's index that the C++ test evaluates too (tests/codeformer_fixture.h):

  f(name, i) = ((splitmix64(fnv1a64(name) ^ seed * G + (i + 1) * G) >> 40) * 2^-23) - 1, in [-1, 1)
  value      = f * scale + offset (float32; scale a power of two, so the product is exact and the
               result does not depend on fused multiply-adds)

with G = 0x9E3779B97F4A7C15 and, per tensor of the official layout:
  GroupNorm / LayerNorm weight (rank 1, ".weight")  scale 2^-3, offset 1
  any ".bias"                                       scale 2^-4
  conv weight [O, I, k, k], linear / codebook / position_emb [R, C]
                                                    scale 2^round(log2 sqrt(3 / fan_in)), fan_in
                                                    I k k or C: uniform of variance ~1 / fan_in

The configuration is reduced where the constructor allows it: dim_embd 128, n_head 8, n_layers 3,
codebook_size 64, connect_list 32, 64, 128, 256 (the released one).

  input.npy        (2, 512, 512, 3) uint8 RGB: ffhq_lq_00000 and ffhq_lq_00002 of ../shared/images
                   (degraded aligned faces, 1024 x 1024) halved by 2 x 2 means, rounded
  indices.npy      (2, 256) int32: the code the official network picks per position (top-1)
  output_w<W>.npy  (2, 128, 128, 3) float32: the raw output at fidelity W (0, 0.5, 1), NHWC, at rows
                   1::4 and columns 2::4 (a sixteenth of the pixels, to keep the files small)
  layout_official.json  every state-dict tensor (name, shape, in state-dict order) of the released
                   model's configuration (CodeFormer() defaults, as inference_codeformer.py builds
                   it; its checkpoint holds them under 'params_ema') and the parameter count
  manifest.json    the configuration, seed and rule above, and per W the largest |output| over
                   the whole image; at W 0 also how far a float64 run moves the output and the
                   logits (float rounding alone) and the smallest top-1 margin of the logits (how
                   far from a tie the codes are)

The network input is x = (rgb / 255 - 0.5) / 0.5 in float32, NCHW, as inference_codeformer.py
normalises; the net is called as there, net(x, w=w, adain=True)[0].
Run: CODEFORMER_PIP=/tmp/codeformer-pip /usr/bin/python3 tests/reference/make_codeformer_fixtures.py
"""
import json
import math
import os
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_transformer_fixtures import load_official  # noqa: E402

OUT = os.path.normpath(os.path.join(HERE, "..", "fixtures", "codeformer"))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "images"))
FACES = ["ffhq_lq_00000.png", "ffhq_lq_00002.png"]
SEED = 20251
CONFIG = dict(dim_embd=128, n_head=8, n_layers=3, codebook_size=64, connect_list=["32", "64", "128", "256"])
FIDELITIES = [0.0, 0.5, 1.0]
F64_FIDELITIES = [0.0]  # the float64 run is slow; the fuse blocks are convs like the rest
MASK64 = (1 << 64) - 1
G = 0x9E3779B97F4A7C15


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def uniform(name, n, seed=SEED):
    base = np.uint64(fnv1a64(name) ^ ((seed * G) & MASK64))
    with np.errstate(over="ignore"):
        z = base + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(G)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float32)
    return u * np.float32(2.0 ** -23) - np.float32(1.0)


def pow2(x):
    return 2.0 ** math.floor(math.log2(x) + 0.5)


def scale_offset(name, shape):
    if name.endswith(".bias"):
        return 2.0 ** -4, 0.0
    if len(shape) == 1:
        return 2.0 ** -3, 1.0
    fan_in = int(np.prod(shape[1:]))
    return pow2(math.sqrt(3.0 / fan_in)), 0.0


def weights(model, seed=SEED):
    sd = model.state_dict()
    for k, v in sd.items():
        s, o = scale_offset(k, tuple(v.shape))
        f = uniform(k, v.numel(), seed) * np.float32(s) + np.float32(o)
        v.copy_(torch.from_numpy(f.reshape(tuple(v.shape))))


def faces():
    out = []
    for f in FACES:
        a = np.asarray(Image.open(os.path.join(SHARED, f)).convert("RGB"), dtype=np.uint32)
        s = a[0::2, 0::2] + a[1::2, 0::2] + a[0::2, 1::2] + a[1::2, 1::2]
        out.append(((s + 2) // 4).astype(np.uint8))
    return np.stack(out)


def write_layout():
    sd = load_official().CodeFormer().state_dict()
    tensors = [[k, list(v.shape)] for k, v in sd.items()]
    doc = dict(args=dict(dim_embd=512, n_head=8, n_layers=9, codebook_size=1024,
                         connect_list=["32", "64", "128", "256"]),
               checkpoint_key="params_ema", parameters=int(sum(v.numel() for v in sd.values())), tensors=tensors)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "layout_official.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def run(fidelities, f64_fidelities):
    """Writes input.npy, indices.npy and output_w<W>.npy for each W; returns the manifest's
    per-W entries. The float64 run (slow: PyTorch's float64 convs) only for f64_fidelities."""
    torch.set_num_threads(2)
    torch.manual_seed(0)
    official = load_official()
    net = official.CodeFormer(**CONFIG).eval()
    weights(net)
    rgb = faces()
    x = (rgb.astype(np.float32) / np.float32(255.0) - np.float32(0.5)) / np.float32(0.5)
    x = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    net64 = official.CodeFormer(**CONFIG).eval()
    net64.load_state_dict(net.state_dict())
    net64 = net64.double()
    # get_codebook_feat casts its one-hot matrix to float32; in the float64 run the same rows are
    # gathered in float64.
    emb64 = net64.quantize.embedding.weight
    net64.quantize.get_codebook_feat = (
        lambda idx, shape: emb64[idx.reshape(-1)].view(shape).permute(0, 3, 1, 2).contiguous())
    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, "input.npy"), rgb)
    entries = {}
    with torch.no_grad():
        for w in fidelities:
            out, logits, _ = net(x, w=w, adain=True)
            # CodeFormer.forward's pick: the top-1 of the softmax of the logits.
            idx = torch.topk(torch.softmax(logits, dim=2), 1, dim=2)[1][..., 0].to(torch.int32)
            path = os.path.join(OUT, "indices.npy")
            if os.path.exists(path) and w != fidelities[0]:
                assert np.array_equal(np.load(path), idx.numpy()), "the codes depend on w"
            else:
                np.save(path, idx.numpy())
            nhwc = out.permute(0, 2, 3, 1).contiguous().numpy()
            np.save(os.path.join(OUT, f"output_w{w:g}.npy"), np.ascontiguousarray(nhwc[:, 1::4, 2::4, :]))
            e = dict(max_abs=float(np.abs(nhwc).max()))
            if w in f64_fidelities:
                out64, logits64, _ = net64(x.double(), w=w, adain=True)
                assert torch.equal(idx, logits64.argmax(dim=2).to(torch.int32)), "float64 picks other codes"
                top2 = logits64.topk(2, dim=2).values
                e.update(f64_maxabs_diff=float((out.double() - out64).abs().max()),
                         logit_f64_maxabs_diff=float((logits.double() - logits64).abs().max()),
                         min_top1_margin=float((top2[..., 0] - top2[..., 1]).min()),
                         logit_std=float(logits64.std()))
            entries[f"{w:g}"] = e
            print(w, e, flush=True)
    return entries


def write_manifest(entries):
    manifest = dict(config=CONFIG, seed=SEED, faces=FACES, sample="rows 1::4, columns 2::4",
                    f64_checked=[f"{w:g}" for w in F64_FIDELITIES], outputs=entries)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    write_layout()
    write_manifest(run(FIDELITIES, F64_FIDELITIES))


if __name__ == "__main__":
    main()
