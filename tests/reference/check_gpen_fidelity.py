#!/usr/bin/python3
"""The issue's fidelity targets at the released sizes: a random GPEN checkpoint in the official
layout (seeded, as scripts/make_synthetic_gpen.py makes them), the PyTorch reference forward in
float32 on one face and one noise input, and the engine (`gpen restore --aligned --save-raw`) on
the same input once per CPU conv algorithm (GPEN_CPU_CONV, kernels/cpu/winograd.h); prints the
raw output's max and mean |engine - PyTorch| for each, and fails when one misses the targets
(max <= 1e-3, mean <= 1e-4). The fixtures of tests/test_gpen_e2e.cpp are tiny models; this is
the check at 256 and 512, where the sums are 9 * 1024 deep.

Usage: tests/reference/check_gpen_fidelity.py --gpen build/gpen --size 256 [--work DIR]
       [--modes direct,auto,winograd2,winograd4] [--threads 2]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpen_reference as R  # noqa: E402

OFFICIAL = {256: (1, 0.5), 512: (2, 1.0)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--gpen', required=True, help='the gpen CLI')
    ap.add_argument('--size', type=int, default=256, choices=sorted(OFFICIAL))
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--work', default=None, help='where the checkpoint, .gpw and arrays go (default: a temp dir)')
    ap.add_argument('--modes', default='direct,auto,winograd2,winograd4')
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args(argv)
    work = a.work or tempfile.mkdtemp(prefix='gpen_fid_')
    os.makedirs(work, exist_ok=True)
    cm, narrow = OFFICIAL[a.size]
    ckpt, gpw = os.path.join(work, 'ckpt.pth'), os.path.join(work, 'model.gpw')
    inp, ref = os.path.join(work, 'input.npy'), os.path.join(work, 'expect.npy')
    if not os.path.exists(ref):
        torch.save(R.random_state_dict(a.size, cm, narrow, a.seed), ckpt)
        model = R.load(ckpt)
        face = R.preprocess(R.read_bgr(os.path.join(R.SHARED, 'images', 'ffhq_lq_00000.png')), a.size)
        g = torch.Generator().manual_seed(a.seed + 1)
        x = torch.cat([face, torch.rand(1, 3, a.size, a.size, generator=g) * 2 - 1], 0).contiguous()
        torch.set_num_threads(a.threads)
        with torch.no_grad():
            y = model(x, {})
        np.save(inp, x.numpy())
        np.save(ref, y.numpy().astype(np.float32))
        subprocess.run([a.gpen, 'convert', ckpt, '-o', gpw], check=True, stdout=subprocess.DEVNULL)
    expect = np.load(ref)
    results, ok = {}, True
    for mode in a.modes.split(','):
        raw, img = os.path.join(work, 'raw_%s.npy' % mode), os.path.join(work, 'out_%s' % mode)
        env = dict(os.environ, GPEN_CPU_CONV=mode)
        subprocess.run([a.gpen, '--threads', str(a.threads), 'restore', '--aligned', inp, '-m', gpw, '-o', img,
                        '--save-raw', raw], check=True, env=env, stdout=subprocess.DEVNULL)
        d = np.abs(np.load(raw).astype(np.float64) - expect)
        results[mode] = {'max_abs': float(d.max()), 'mean_abs': float(d.mean())}
        ok = ok and d.max() <= 1e-3 and d.mean() <= 1e-4
    print(json.dumps({'size': a.size, 'seed': a.seed, 'vs_pytorch_fp32': results, 'within_targets': bool(ok)}, indent=1))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
