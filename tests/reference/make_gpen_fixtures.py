#!/usr/bin/python3
"""Generate the GPEN layer-by-layer fixtures under tests/fixtures/gpen/.

For each small configuration: a random checkpoint in the official layout (torch.save
zip format), an input batch (N=2, NCHW float32 RGB in [-1, 1]), every intermediate
tensor of the reference forward pass as .npy (NCHW), and manifest.json describing them.

The configurations shrink style_dim to 64 and 32 (the official models use 512) because the
8-layer mapping network alone would be 8 MB at 512; everything else (n_mlp=8, key
names, isconcat, FIR buffers) is as in the official models, and style_dim is readable
from the checkpoint (final_linear.0.weight rows).

Usage: /usr/bin/python3 tests/reference/make_gpen_fixtures.py [--out DIR]
Deterministic: the same torch/numpy/cv2 versions give byte-identical .npy files.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpen_reference as R  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
FACE_IMAGE = os.path.join(R.SHARED, 'images', 'ffhq_lq_00000.png')

# name: (size, cm, narrow, style_dim, n_mlp, seed). Channels: s32 has 12 at every
# resolution (not a power of two: catches SIMD tail bugs); s64 has 8 up to 32x32 and 4 at 64x64 (exercises a channel change).
# Two different style_dims make sure a consumer reads it from the checkpoint.
CONFIGS = {
    's32': (32, 1, 3 / 128, 64, 8, 1001),
    's64': (64, 1, 1 / 64, 32, 8, 1002),
}

DESCRIPTIONS = {
    'input': 'generator input x, NCHW float32 RGB model space [-1,1]; sample 0 is %s '
             'through the official preprocessing, sample 1 uniform noise' % os.path.basename(FACE_IMAGE),
    'z': 'encoder code: flrelu(final_linear(flatten(enc_last))) (N, style_dim)',
    'w': 'mapping output w = style(z): PixelNorm then n_mlp EqualLinear+flrelu (N, style_dim)',
    'output': 'generator output rgb = output of the last ToRGB (not saved separately), '
              'model space, not clipped (N,3,S,S)',
    'output_uint8': 'official postprocessing of output: *0.5+0.5, RGB->BGR, clip [0,1], *255, '
                    'truncate to uint8; NHWC BGR',
}


def describe(key):
    if key in DESCRIPTIONS:
        return DESCRIPTIONS[key]
    if key.startswith('enc'):
        return 'encoder feature e_%s = ecd%s output after flrelu (NCHW)' % (key[3:], key[3:])
    base = key.split('.style')[0].split('.demod')[0].split('.convT')[0].split('.modconv')[0]
    layer = base.replace('gen.', 'generator.')
    if key.endswith('.style'):
        return 'style s = %s.conv.modulation(w) (N, in_ch)' % layer
    if key.endswith('.demod'):
        return 'demodulation d = rsqrt(sum_i,k (scale*W*s)^2 + 1e-8) of %s (N, out_ch)' % layer
    if key.endswith('.convT'):
        return '%s: transposed conv output before the 4k blur (N, out, 2H+1, 2W+1)' % layer
    if key.endswith('.modconv'):
        return '%s: modulated conv output before noise concat and activation (NCHW)' % layer
    if key == 'gen.to_rgb1':
        return 'generator.to_rgb1 output rgb (modulated 1x1 conv + bias, no skip) (N,3,4,4)'
    if 'to_rgb' in key:
        return '%s output rgb (ToRGB + upsampled skip) (N,3,H,W)' % layer
    return '%s output: flrelu(concat(modconv, noise.weight * encoder feature)), 2*out channels (NCHW)' % layer


def wanted(key, n_rgbs):
    """Which trace entries are committed: every layer output, every style/demod, and
    the pre-activation tensors of the first two layers (to localise a mismatch).
    The last ToRGB output is the final output, saved once as `output`."""
    if key.endswith('.convT') or key.endswith('.modconv'):
        return key.startswith('gen.conv1.') or key.startswith('gen.convs.0.')
    return key != 'gen.to_rgbs.%d' % (n_rgbs - 1)


def make_input(size, seed):
    import cv2
    face = R.preprocess(R.read_bgr(FACE_IMAGE), size)
    g = torch.Generator().manual_seed(seed)
    noise = torch.rand(1, 3, size, size, generator=g) * 2 - 1
    del cv2
    return torch.cat([face, noise], 0).contiguous()


def generate(name, cfg, outdir):
    size, cm, narrow, style_dim, n_mlp, seed = cfg
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    sd = R.random_state_dict(size, cm, narrow, seed, style_dim, n_mlp)
    ckpt = os.path.join(d, 'checkpoint.pth')
    torch.save(sd, ckpt)
    model = R.load(ckpt)                      # round trip through the saved file
    x = make_input(size, seed + 1)

    trace = {}
    with torch.no_grad():
        y = model(x, trace)
        # float64 run: its distance to the float32 run shows how much float rounding alone moves each tensor
        trace64 = {}
        model.double()(x.double(), trace64)
        model.float()

    files = []

    def save(key, arr, desc):
        fn = key.replace('.', '_') + '.npy'
        np.save(os.path.join(d, fn), arr)
        entry = {'file': '%s/%s' % (name, fn), 'name': key, 'shape': list(arr.shape),
                 'dtype': str(arr.dtype), 'desc': desc}
        if arr.dtype == np.float32:
            entry['stats'] = {'min': float(arr.min()), 'max': float(arr.max()),
                              'mean': float(arr.mean()), 'std': float(arr.std())}
            if key in trace64:
                ref64 = trace64[key].numpy()
                entry['f64_maxabs_diff'] = float(np.abs(ref64 - arr).max())
                entry['f64_maxrel_diff'] = float(np.abs(ref64 - arr).max() / max(np.abs(ref64).max(), 1e-30))
        files.append(entry)

    save('input', x.numpy(), describe('input'))
    for key, t in trace.items():
        if wanted(key, len(model.generator.to_rgbs)):
            save(key, t.numpy().astype(np.float32), describe(key))
    out_u8 = np.stack([R.postprocess(y[i:i + 1]) for i in range(y.shape[0])])
    save('output_uint8', out_u8, describe('output_uint8'))

    yn = y.numpy()
    stats = {'std': float(yn.std()), 'mean': float(yn.mean()), 'min': float(yn.min()), 'max': float(yn.max()),
             'clipped_fraction': float((np.abs(yn) > 1).mean())}
    # random weights must give a live, unsaturated output or the fixture tests little
    assert stats['std'] > 0.05 and stats['clipped_fraction'] < 0.05, stats
    for key, t in trace.items():
        assert float(t.std()) > 1e-3, (key, 'degenerate tensor')
    ch = R.channel_table(cm, narrow)
    return {
        'config': {'size': size, 'channel_multiplier': cm, 'narrow': narrow, 'style_dim': style_dim,
                   'n_mlp': n_mlp, 'isconcat': True, 'seed': seed,
                   'channels': {str(r): ch[r] for r in sorted(ch) if r <= size}},
        'checkpoint': '%s/checkpoint.pth' % name,
        'param_count': R.param_count(model),
        'output_stats': stats,
        'files': files,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.path.join(REPO, 'tests', 'fixtures', 'gpen'))
    a = ap.parse_args()
    torch.set_num_threads(1)                  # fixed reduction order
    for name in CONFIGS:
        shutil.rmtree(os.path.join(a.out, name), ignore_errors=True)
    manifest = {
        'generator': 'tests/reference/make_gpen_fixtures.py (reference: tests/reference/gpen_reference.py)',
        'torch_version': torch.__version__,
        'conventions': 'All activations NCHW float32 RGB (the engine transposes to NHWC). Names follow '
                       'gpen_reference trace keys: enc{j} = e_j (resolution S/2^j), gen.conv1, '
                       'gen.convs.{k}, gen.to_rgb1, gen.to_rgbs.{i}; in file names dots become '
                       'underscores. Noise inputs are the encoder features (no random noise). '
                       'f64_maxabs_diff = |float64 reference - this float32 tensor|, a scale for tolerances.',
        'configs': {},
    }
    for name, cfg in CONFIGS.items():
        manifest['configs'][name] = generate(name, cfg, a.out)
    with open(os.path.join(a.out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    total = 0
    for root, _, fs in os.walk(a.out):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in fs)
    print('wrote %s (%d bytes)' % (a.out, total))
    for name, c in manifest['configs'].items():
        print(name, c['config']['channels'], 'params', c['param_count'], 'output', c['output_stats'])
    assert total < 3 * 1024 * 1024, 'fixtures exceed 3 MB'


if __name__ == '__main__':
    main()
