#!/usr/bin/python3
"""PyTorch re-creations of the official GPEN task flows beyond face enhancement, written from
../shared/reference/gpen-semantics.md ("FullGenerator_SR", "Colorization", "Inpainting",
"Seg2Face") and the official face_model/face_gan.py, face_colorization.py, face_inpainting.py and
segmentation2face.py (FaceGAN.process on the whole input image, aligned mode):

- FullGeneratorSR(in_size, out_size): the encoder of FullGenerator(in_size) feeding a
  Generator(out_size); every StyledConv above in_size concatenates noise.weight * N(0, 1) noise of
  its own output's shape. The official code draws that noise with torch (unseeded); `noise` here
  is a callable (r, ch, n, layer) -> (n, ch, r, r), so a test can pass zeros-independent fresh
  torch noise, or engine_noise(), the engine's seeded stream (engine/models/gpen_noise.cpp).
- facegan_process(): cv2.resize to in_size, v/255 (then (t-0.5)/0.5 when is_norm), BGR->RGB,
  the model, back (y*0.5+0.5 when is_norm), clip [0, 1] * 255, truncation.
- colorize(): facegan_process, then only when the output size differs from the input's: bilinear
  resize to the input size and the Y of BGR2YUV(input) into BGR2YUV(output), YUV2BGR (cv2).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpen_reference as R  # noqa: E402

M64 = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def engine_noise(seed, face, layer, n):
    """The engine's gaussian_noise(seed, face, layer): n float32 values (NHWC order of its
    [r, r, ch] noise input). Pure Python port, for fixtures only."""
    _, k = _splitmix64(seed & M64)
    k ^= face
    _, k = _splitmix64(k)
    k ^= layer
    s = []
    for _ in range(4):
        k, v = _splitmix64(k)
        s.append(v)

    def nxt():
        r = (_rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return r

    def open01():
        return ((nxt() >> 11) + 0.5) * (1.0 / 9007199254740992.0)

    out = np.empty(n, np.float32)
    i = 0
    while i + 1 < n:
        r = math.sqrt(-2.0 * math.log(open01()))
        a = 2 * math.pi * open01()
        out[i] = r * math.cos(a)
        out[i + 1] = r * math.sin(a)
        i += 2
    if i < n:
        r = math.sqrt(-2.0 * math.log(open01()))
        out[i] = r * math.cos(2 * math.pi * open01())
    return out


def engine_noise_fn(seed, first_face=0):
    """noise(r, ch, n, layer) -> (n, ch, r, r) torch tensor from the engine's stream."""
    def fn(r, ch, n, layer):
        faces = [engine_noise(seed, first_face + i, layer, r * r * ch).reshape(r, r, ch).transpose(2, 0, 1)
                 for i in range(n)]
        return torch.from_numpy(np.ascontiguousarray(np.stack(faces)))
    return fn


def torch_noise_fn(generator=None):
    """What the official NoiseInjection does: fresh N(0, 1) on every call."""
    return lambda r, ch, n, layer: torch.randn(n, ch, r, r, generator=generator)


class FullGeneratorSR(R.FullGenerator):
    """Same module tree (and state-dict names) as the official FullGenerator_SR."""

    def __init__(self, in_size, out_size, style_dim=512, n_mlp=8, channel_multiplier=2, narrow=1.0):
        super().__init__(in_size, style_dim, n_mlp, channel_multiplier, narrow)
        if out_size < in_size or out_size & (out_size - 1):
            raise ValueError('out_size must be a power of two >= in_size')
        self.out_size = out_size
        # Replacing the attribute keeps its place in the state dict (generator first, as official).
        self.generator = R.Generator(out_size, style_dim, n_mlp, channel_multiplier, narrow)
        self.ch = R.channel_table(channel_multiplier, narrow)

    def forward(self, x, noise=None):
        noise = noise or torch_noise_fn()
        feats = {}
        h = x
        for j in range(self.log_size - 1):
            h = getattr(self, 'ecd%d' % j)(h)
            feats[self.size >> j] = h
        z = self.final_linear(h.reshape(h.shape[0], -1))
        G = self.generator
        w = G.style(z)
        n = x.shape[0]
        layer = [0]

        def feat(r):
            if r in feats:
                return feats[r]
            t = noise(r, self.ch[r], n, layer[0]).to(x.dtype)
            layer[0] += 1
            return t
        out = G.conv1(G.input(n), w, feats[4])
        rgb = G.to_rgb1(out, w, None)
        for i in range(len(G.to_rgbs)):
            r = 2 ** (i + 3)
            out = G.convs[2 * i](out, w, feat(r))
            out = G.convs[2 * i + 1](out, w, feat(r))
            rgb = G.to_rgbs[i](out, w, rgb)
        return rgb


def random_state_dict(model, seed, zero_sr_noise=False):
    """Moderate random values in the official layout (the rules of gpen_reference's
    random_state_dict); zero_sr_noise: noise.weight = 0 for every StyledConv above in_size."""
    g = torch.Generator().manual_seed(int(seed))
    out = {}
    log_in = model.log_size
    for name, t in model.state_dict().items():
        shape = t.shape

        def randn(std=1.0, mean=0.0):
            return torch.randn(shape, generator=g) * std + mean
        if name.endswith('.kernel'):
            v = t.clone()
        elif name.startswith('generator.style.') and name.endswith('.weight'):
            v = randn(100.0)
        elif name.startswith('generator.style.') and name.endswith('.bias'):
            v = randn(10.0)
        elif name.endswith('modulation.bias'):
            v = randn(0.1, 1.0)
        elif name.endswith('noise.weight'):
            v = torch.rand(shape, generator=g) * 0.4 + 0.1
            if zero_sr_noise and name.startswith('generator.convs.'):
                r = 2 ** (int(name.split('.')[2]) // 2 + 3)
                if r > 2 ** log_in:
                    v = torch.zeros(shape)
        elif 'to_rgb' in name and name.endswith('conv.weight'):
            v = randn(0.3)
        elif name.endswith('bias'):
            v = randn(0.1)
        else:
            v = randn(1.0)
        out[name] = v.to(torch.float32).contiguous()
    return out


def facegan_process(model, img_bgr, in_size, is_norm=True, noise=None):
    """Official FaceGAN.process on one uint8 BGR image."""
    import cv2
    img = cv2.resize(img_bgr, (in_size, in_size))
    t = torch.from_numpy(np.ascontiguousarray(img)) / 255.
    if is_norm:
        t = (t - 0.5) / 0.5
    t = t.permute(2, 0, 1).unsqueeze(0).flip(1).contiguous().float()
    with torch.no_grad():
        y = model(t, noise) if isinstance(model, FullGeneratorSR) else model(t)
    if is_norm:
        y = y * 0.5 + 0.5
    y = y.squeeze(0).permute(1, 2, 0).flip(2)
    return (np.clip(y.float().numpy(), 0, 1) * 255.0).astype(np.uint8)


def colorize(model, gray_bgr, in_size):
    """Official FaceColorization.process (aligned): the output takes the input's luma."""
    import cv2
    out = facegan_process(model, gray_bgr, in_size)
    if gray_bgr.shape[:2] != out.shape[:2]:
        out_rs = cv2.resize(out, gray_bgr.shape[:2][::-1])
        gray_yuv = cv2.cvtColor(gray_bgr, cv2.COLOR_BGR2YUV)
        out_yuv = cv2.cvtColor(out_rs, cv2.COLOR_BGR2YUV)
        out_yuv[:, :, 0] = gray_yuv[:, :, 0]
        out = cv2.cvtColor(out_yuv, cv2.COLOR_YUV2BGR)
    return out
