#!/usr/bin/python3
"""Writes tests/fixtures/gfpgan/ with the official GFPGANv1Clean (tests/reference/gfpgan_official.py
says how to install it out of tree). Deterministic: one torch thread, seeded generators.

  layout_official.json   every state-dict tensor (name, shape, in state-dict order) of the
                         released clean models (GFPGANv1.3, GFPGANv1.4, GFPGANCleanv1-NoCE-C2:
                         GFPGANer(arch='clean') arguments) and the parameter count
  <cfg>/checkpoint.pth   random weights in the official layout, under 'params_ema' like the
                         released files
  <cfg>/input.npy        (2, 3, S, S) float32: a face crop in model space ([-1, 1] RGB) and noise
  <cfg>/style_code.npy   final_linear output (N, num_latent * num_style_feat or num_style_feat)
  <cfg>/output.npy       the raw network output image (randomize_noise=False: the stored noise
                         buffers), float32
  manifest.json          configurations, shapes, and f64_maxabs_diff: how far a float64 run of the
                         same model moves each output (float rounding alone)

Configurations (small, so the files stay small; every other argument as the released models):
  s64: out_size 64, num_style_feat 32, channel_multiplier 1, narrow 1/32, different_w, sft_half
  s32: out_size 32, num_style_feat 16, channel_multiplier 2, narrow 1/32, one style code, full SFT
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gfpgan_official  # noqa: E402

OUT = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'gfpgan'))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared'))

CONFIGS = {
    's64': dict(out_size=64, num_style_feat=32, channel_multiplier=1, narrow=1 / 32, different_w=True,
                sft_half=True),
    's32': dict(out_size=32, num_style_feat=16, channel_multiplier=2, narrow=1 / 32, different_w=False,
                sft_half=False),
}


def randomize(model, seed):
    """Every tensor non-zero and of a scale that keeps activations O(1) through the network."""
    g = torch.Generator().manual_seed(seed)
    sd = model.state_dict()
    for k, v in sd.items():
        n = torch.randn(v.shape, generator=g, dtype=torch.float64)
        if k.endswith('modulation.bias'):
            v.copy_(1 + 0.1 * n)
        elif '.noises.' in k or k.endswith('constant_input.weight'):
            v.copy_(n)
        elif k.endswith('.weight') and v.numel() == 1:  # StyleConv noise strength
            v.copy_(0.1 + 0.4 * torch.rand(v.shape, generator=g, dtype=torch.float64))
        elif k.endswith('.bias'):
            v.copy_(0.1 * n)
        elif v.dim() >= 2:
            fan_in = v[0].numel() if v.dim() != 5 else v[0, 0].numel()
            v.copy_(n / fan_in ** 0.5)
        else:
            v.copy_(n)
    return sd


def face_input(size):
    import cv2
    x = np.random.default_rng(7).uniform(-1, 1, (2, 3, size, size)).astype(np.float32)
    p = os.path.join(SHARED, 'images', 'ffhq_lq_00000.png')
    img = cv2.imread(p, cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f'{p} not found')
    img = cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)[:, :, ::-1].astype(np.float32) / 255
    x[0] = ((img - 0.5) / 0.5).transpose(2, 0, 1)
    return x


def run(model, x):
    feats = {}
    h = model.final_linear.register_forward_hook(lambda m, i, o: feats.__setitem__('style_code', o))
    with torch.no_grad():
        img, _ = model(torch.from_numpy(x).to(next(model.parameters()).dtype), return_rgb=False,
                       randomize_noise=False)
    h.remove()
    return img.numpy(), feats['style_code'].numpy()


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    manifest = {'generator': 'tests/reference/make_gfpgan_fixtures.py', 'official': 'gfpgan 1.3.8 GFPGANv1Clean',
                'configs': {}}
    full = gfpgan_official.build()
    sd = full.state_dict()
    layout = {'args': {k: v for k, v in gfpgan_official.OFFICIAL_ARGS.items() if k != 'decoder_load_path'},
              'checkpoint_key': 'params_ema', 'parameters': int(sum(v.numel() for v in sd.values())),
              'tensors': [[k, list(v.shape)] for k, v in sd.items()]}
    with open(os.path.join(OUT, 'layout_official.json'), 'w') as f:
        json.dump(layout, f, indent=None, separators=(',', ':'))
        f.write('\n')
    del full, sd
    for i, (name, cfg) in enumerate(CONFIGS.items()):
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        model = gfpgan_official.build(**cfg).eval()
        sd = randomize(model, 100 + i)
        torch.save({'params_ema': sd}, os.path.join(d, 'checkpoint.pth'))
        x = face_input(cfg['out_size'])
        out, style = run(model, x)
        out64, style64 = run(model.double(), x.astype(np.float64))
        np.save(os.path.join(d, 'input.npy'), x)
        np.save(os.path.join(d, 'output.npy'), out)
        np.save(os.path.join(d, 'style_code.npy'), style)
        manifest['configs'][name] = {
            'args': cfg,
            'output': {'shape': list(out.shape), 'maxabs': float(np.abs(out).max()),
                       'f64_maxabs_diff': float(np.abs(out - out64).max())},
            'style_code': {'shape': list(style.shape), 'f64_maxabs_diff': float(np.abs(style - style64).max())},
        }
    with open(os.path.join(OUT, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=2)
        f.write('\n')


if __name__ == '__main__':
    main()
