#!/usr/bin/python3
"""Exports the official GFPGANv1Clean (gfpgan_official.py loads it out of tree) to ONNX for the
ONNX Runtime / OpenVINO peers of `gpen bench --arch gfpgan`, as FaceFusion ships it: the raw
network, image in, image out (return_rgb=False, randomize_noise=False: the stored noise buffers).

The weights are the engine's: --checkpoint, the .pth the .gpw was converted from, or else the
synthetic weights `gpen bench --arch gfpgan` makes for a configuration (--seed), which
synthetic_state_dict() below draws bit for bit as converter/synthetic_gfpgan.cpp does. The input is
uniform in [-1, 1) (seed 0). Writes into --out-dir the .onnx, ..._input.npy (N, 3, S, S) and
..._expect.npy (the official PyTorch forward on that input), reusing them when present, and
prints one JSON line with their paths.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gfpgan_official  # noqa: E402

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def synthetic_values(name, shape, seed):
    """Element i of `name`: splitmix64 of (fnv1a64(name) ^ seed) + (i + 1) * golden, its top 24 bits
    as v in [-1, 1) (exact in float32), scaled by the tensor's role so activations stay O(1)."""
    n = int(np.prod(shape)) if shape else 1
    with np.errstate(over='ignore'):
        z = np.uint64((fnv1a64(name) ^ seed) & M64) + (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    v = ((z >> np.uint64(40)).astype(np.int64) - (1 << 23)).astype(np.float32) / np.float32(1 << 23)
    if name.endswith('modulation.bias'):
        v = np.float32(1) + v / np.float32(8)
    elif '.noises.' in name or name.endswith('constant_input.weight'):
        pass
    elif name.endswith('.weight') and n == 1:  # StyleConv noise strength
        v = np.float32(0.25) + v / np.float32(8)
    elif name.endswith('.bias'):
        v = v / np.float32(8)
    elif len(shape) >= 2:
        fan_in = n // (shape[0] * shape[1]) if len(shape) == 5 else n // shape[0]
        v = v * np.float32(math.sqrt(3.0 / fan_in))
    return v.reshape(shape)


def synthetic_state_dict(model, seed):
    return {k: torch.from_numpy(synthetic_values(k, tuple(v.shape), seed)) for k, v in model.state_dict().items()}


class Restorer(torch.nn.Module):
    """The raw network as FaceFusion runs it: image in, restored image out."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x, return_rgb=False, randomize_noise=False)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', help='the official .pth (params_ema); else synthetic weights of the configuration')
    ap.add_argument('--seed', type=int, default=1, help='seed of the synthetic weights (as gpen bench)')
    ap.add_argument('--size', type=int, default=512)
    ap.add_argument('--cm', type=float, default=2)
    ap.add_argument('--narrow', type=float, default=1.0)
    ap.add_argument('--style-feat', type=int, default=512)
    ap.add_argument('--different-w', type=int, default=1)
    ap.add_argument('--sft-half', type=int, default=1)
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--opset', type=int, default=17)
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--out-dir', required=True)
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    cm = int(a.cm) if float(a.cm).is_integer() else a.cm
    if a.checkpoint:
        st = os.stat(a.checkpoint)
        weights = '%s_%d_%d' % (os.path.splitext(os.path.basename(a.checkpoint))[0], st.st_size, int(st.st_mtime))
    else:
        weights = 'seed%d' % a.seed
    stem = os.path.join(a.out_dir, 'gfpgan_%d_cm%g_n%g_f%d_w%d_h%d_%s_b%d_o%d' % (
        a.size, cm, a.narrow, a.style_feat, a.different_w, a.sft_half, weights, a.batch, a.opset))
    onnx_path, in_path, exp_path = stem + '.onnx', stem + '_input.npy', stem + '_expect.npy'
    info = {'onnx': onnx_path, 'input': in_path, 'expect': exp_path, 'opset': a.opset, 'weights': weights}
    if all(os.path.exists(p) for p in (onnx_path, in_path, exp_path)):
        info['cached'] = True
        print(json.dumps(info))
        return 0
    os.makedirs(a.out_dir, exist_ok=True)
    net = gfpgan_official.build(out_size=a.size, channel_multiplier=cm, narrow=a.narrow, num_style_feat=a.style_feat,
                                different_w=bool(a.different_w), sft_half=bool(a.sft_half)).eval()
    if a.checkpoint:
        ck = torch.load(a.checkpoint, map_location='cpu', weights_only=True)
        net.load_state_dict(ck.get('params_ema', ck.get('params', ck)))
    else:
        net.load_state_dict(synthetic_state_dict(net, a.seed))
    model = Restorer(net).eval()
    x = torch.rand(a.batch, 3, a.size, a.size, generator=torch.Generator().manual_seed(0)) * 2 - 1
    t0 = time.perf_counter()
    with torch.no_grad():
        expect = model(x)
        torch.onnx.export(model, (x,), onnx_path + '.tmp', input_names=['input'], output_names=['output'],
                          opset_version=a.opset, do_constant_folding=True)
    os.replace(onnx_path + '.tmp', onnx_path)
    np.save(in_path, x.numpy().astype(np.float32))
    np.save(exp_path, expect.numpy().astype(np.float32))
    info.update(torch=torch.__version__, export_s=round(time.perf_counter() - t0, 2),
                onnx_bytes=os.path.getsize(onnx_path))
    print(json.dumps(info))
    return 0


if __name__ == '__main__':
    sys.exit(main())
