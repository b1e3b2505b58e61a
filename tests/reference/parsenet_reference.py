#!/usr/bin/python3
"""PyTorch re-creation of GPEN's face parser (ParseNet and FaceParse.process), written from
../shared/reference/gpen-semantics.md, section "Face parsing mask": ParseNet(512, 512, 32, 64, 19,
norm_type='bn', relu_type='LeakyReLU', ch_range=[32, 256]), res_depth 10. Module names reproduce
the official state-dict keys (checkpoint_layouts.json "ParseNet-latest"), so a real
ParseNet-latest.pth loads with strict=True.

  parsenet_reference.py --make-checkpoint OUT.pth [--seed N]     random weights, official layout,
        BatchNorm statistics calibrated on a random batch, then perturbed (non-trivial folds)
  parsenet_reference.py --checkpoint X.pth --case DIR --sizes HxW[,HxW...] [--seed N]
        writes DIR/HxW/input.npy (1 x H x W x 3 float32, NHWC, RGB in [-1, 1]), logits.npy
        (1 x H x W x 19, NHWC), labels.npy (H x W uint8) and mask.npy (H x W uint8)
        (--make-checkpoint OUT.pth --case DIR ... does both in one run: torch imports slowly)
  parsenet_reference.py --checkpoint X.pth --face IMG.png --out MASK.png   FaceParse.process
  parsenet_reference.py [--checkpoint X.pth] --bench [--size 512] [--threads 2] [--runs 3]
        (random weights without --checkpoint; prints one JSON line)
  parsenet_reference.py --self-test

Use /usr/bin/python3 (torch, numpy, cv2). Deterministic for a fixed torch build and thread count.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared'))
LAYOUTS_JSON = os.path.join(SHARED, 'reference', 'checkpoint_layouts.json')

DROP_CLASSES = (0, 14, 18)   # MASK_COLORMAP: background, hat, cloth -> 0; every other label -> 255


class ConvLayer(nn.Module):
    """Optional nearest 2x upsample, reflection pad 1, 3x3 conv (stride 2 for 'down'), optional
    eval BatchNorm (`norm.norm`), optional LeakyReLU(0.2). The conv has a bias only without BN."""

    def __init__(self, cin, cout, scale='none', bn=False, act=False):
        super().__init__()
        self.scale = scale
        self.conv2d = nn.Conv2d(cin, cout, 3, 2 if scale == 'down' else 1, 0, bias=not bn)
        self.norm = None
        if bn:
            self.norm = nn.Module()
            self.norm.norm = nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        if self.scale == 'up':
            x = F.interpolate(x, scale_factor=2, mode='nearest')
        x = self.conv2d(F.pad(x, (1, 1, 1, 1), mode='reflect'))
        if self.norm is not None:
            x = self.norm.norm(x)
        if self.act:
            x = F.leaky_relu(x, 0.2)
        return x


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, scale='none'):
        super().__init__()
        self.has_shortcut = not (scale == 'none' and cin == cout)
        if self.has_shortcut:
            self.shortcut_func = ConvLayer(cin, cout, scale)
        s1, s2 = {'down': ('none', 'down'), 'up': ('up', 'none'), 'none': ('none', 'none')}[scale]
        self.conv1 = ConvLayer(cin, cout, s1, bn=True, act=True)
        self.conv2 = ConvLayer(cout, cout, s2, bn=True, act=False)

    def forward(self, x):
        identity = self.shortcut_func(x) if self.has_shortcut else x
        return identity + self.conv2(self.conv1(x))


class ParseNet(nn.Module):
    def __init__(self):
        super().__init__()
        enc = [ConvLayer(3, 64)]
        for cin, cout in ((64, 128), (128, 256), (256, 256), (256, 256)):
            enc.append(ResidualBlock(cin, cout, 'down'))
        self.encoder = nn.Sequential(*enc)
        self.body = nn.Sequential(*[ResidualBlock(256, 256) for _ in range(10)])
        dec = []
        for cin, cout in ((256, 256), (256, 256), (256, 128), (128, 64)):
            dec.append(ResidualBlock(cin, cout, 'up'))
        self.decoder = nn.Sequential(*dec)
        self.out_img_conv = ConvLayer(64, 3)
        self.out_mask_conv = ConvLayer(64, 19)

    def forward(self, x, with_img=False):
        feat = self.encoder(x)
        x = feat + self.body(feat)
        x = self.decoder(x)
        mask = self.out_mask_conv(x)
        return (mask, self.out_img_conv(x)) if with_img else mask


def official_layout():
    with open(LAYOUTS_JSON) as f:
        return json.load(f)['ParseNet-latest']


def calibration_batch(g):
    """What the BatchNorm statistics and the class-logit centring are measured on, 128 x 128 in
    [-1, 1]: uniform noise and, when the shared photos are there, a natural face
    (ffhq_lq_00001.png, not a test input) sharp and blurred (a 512 face seen at 128 is what
    ParseNet gets from an S x S GPEN output upsampled to 512: smooth at this scale)."""
    xs = [torch.rand(1, 3, 128, 128, generator=g) * 2 - 1]
    path = os.path.join(SHARED, 'images', 'ffhq_lq_00001.png')
    if os.path.exists(path):
        import cv2
        im = cv2.resize(cv2.imread(path), (128, 128), interpolation=cv2.INTER_AREA)
        for v in (im, cv2.GaussianBlur(im, (0, 0), 3)):
            xs.append(torch.from_numpy((v[:, :, ::-1].astype(np.float32) / 255 * 2 - 1).transpose(2, 0, 1).copy())[None])
    return torch.cat(xs)


def random_state_dict(seed=1):
    """He-initialised convs; BatchNorm running statistics measured on calibration_batch (so the
    network neither vanishes nor explodes) and then perturbed, with random affine parameters;
    the class logits centred on the same batch so that every class wins somewhere and the
    keep / drop mask is neither all 0 nor all 255."""
    g = torch.Generator().manual_seed(seed)
    net = ParseNet()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                fan_in = m.in_channels * 9
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, nn.BatchNorm2d):
                m.momentum = None  # cumulative average: one batch gives its own statistics
        calib = calibration_batch(g)
        net.train()
        net(calib)
        net.eval()
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                std = m.running_var.sqrt()
                m.running_mean.add_(torch.randn(c, generator=g) * 0.1 * std)
                m.running_var.mul_(torch.rand(c, generator=g) * 0.6 + 0.7)
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
                m.num_batches_tracked.fill_(1000 + seed)
                m.momentum = 0.1
        y = net(calib[1:] if calib.shape[0] > 1 else calib)  # the faces, when there
        bias = net.out_mask_conv.conv2d.bias
        bias.sub_(y.mean(dim=(0, 2, 3)))
        bias.add_(torch.randn(19, generator=g) * 0.1 * y.std(dim=(0, 2, 3)))
    return net.state_dict()


def load(path):
    net = ParseNet()
    sd = torch.load(path, map_location='cpu')
    net.load_state_dict(sd, strict=True)
    return net.eval()


def logits_nhwc(net, x_nhwc):
    with torch.no_grad():
        y = net(torch.from_numpy(np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))))
    return y.permute(0, 2, 3, 1).contiguous().numpy()


def labels_and_mask(logits_nhwc_arr):
    # torch.argmax: the first maximum on ties.
    lab = torch.from_numpy(logits_nhwc_arr).argmax(dim=3).numpy().astype(np.uint8)
    mask = np.where(np.isin(lab, DROP_CLASSES), 0, 255).astype(np.uint8)
    return lab, mask


def face_parse_labels(net, bgr):
    """FaceParse.process: cv2.resize to 512 (uint8, bilinear), RGB / 255 * 2 - 1 in float64 cast
    to float32, ParseNet, argmax, MASK_COLORMAP. Returns (labels, mask), uint8 512 x 512 each."""
    import cv2
    im = cv2.resize(bgr, (512, 512))
    x = (im[:, :, ::-1].astype(np.float64) / 255.0 * 2 - 1).astype(np.float32)[None]
    lab, mask = labels_and_mask(logits_nhwc(net, x))
    return lab[0], mask[0]


def face_parse(net, bgr):
    """FaceParse.process: the uint8 512 x 512 mask of 0 / 255."""
    return face_parse_labels(net, bgr)[1]


def mask_postprocess(mask, thres=26):
    """FaceEnhancement.mask_postprocess on the float64 mask / 255."""
    import cv2
    mask = mask.copy()
    mask[:thres, :] = 0
    mask[-thres:, :] = 0
    mask[:, :thres] = 0
    mask[:, -thres:] = 0
    mask = cv2.GaussianBlur(mask, (101, 101), 4)
    mask = cv2.GaussianBlur(mask, (101, 101), 4)
    return mask.astype(np.float32)


def self_test():
    sd = random_state_dict(1)
    lay = official_layout()
    want = [(n, tuple(s)) for n, s, _ in lay['tensors']]
    have = [(k, tuple(v.shape)) for k, v in sd.items()]
    assert sorted(want) == sorted(have), 'layout differs from checkpoint_layouts.json'
    params = sum(v.numel() for k, v in sd.items()
                 if v.is_floating_point() and not k.endswith(('running_mean', 'running_var')))
    assert abs(params - 21.30e6) < 0.01e6, params
    net = ParseNet()
    net.load_state_dict(sd, strict=True)
    net.eval()
    x = torch.rand(1, 3, 64, 64) * 2 - 1
    with torch.no_grad():
        y = net(x)
    lab = y.argmax(1)
    assert y.shape == (1, 19, 64, 64)
    assert len(torch.unique(lab)) >= 5, 'class map nearly constant: weights badly scaled'
    print('ok: %d tensors, %d learnable parameters, %d classes on a 64x64 input'
          % (len(sd), params, len(torch.unique(lab))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--make-checkpoint')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--checkpoint')
    ap.add_argument('--case')
    ap.add_argument('--size', type=int, default=512)
    ap.add_argument('--sizes', default='64x64')
    ap.add_argument('--face')
    ap.add_argument('--out')
    ap.add_argument('--bench', action='store_true')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.self_test:
        return self_test()
    if a.make_checkpoint:
        sd = random_state_dict(a.seed)
        tmp = a.make_checkpoint + '.tmp%d' % os.getpid()
        torch.save(sd, tmp)
        os.replace(tmp, a.make_checkpoint)
        if not a.case:
            return
        a.checkpoint = a.make_checkpoint
    if a.bench and not a.checkpoint:
        net = ParseNet().eval()  # the time does not depend on the weights
    else:
        net = load(a.checkpoint)
    if a.case:
        rng = np.random.default_rng(a.seed)
        for hw in a.sizes.split(','):
            h, w = (int(v) for v in hw.split('x'))
            d = os.path.join(a.case, '%dx%d' % (h, w))
            os.makedirs(d, exist_ok=True)
            x = (rng.random((1, h, w, 3)) * 2 - 1).astype(np.float32)
            y = logits_nhwc(net, x)
            lab, mask = labels_and_mask(y)
            np.save(os.path.join(d, 'input.npy'), x)
            np.save(os.path.join(d, 'logits.npy'), y)
            np.save(os.path.join(d, 'labels.npy'), lab[0])
            np.save(os.path.join(d, 'mask.npy'), mask[0])
        return
    if a.face:
        import cv2
        m = face_parse(net, cv2.imread(a.face))
        cv2.imwrite(a.out, m)
        return
    if a.bench:
        x = torch.rand(1, 3, a.size, a.size) * 2 - 1
        with torch.no_grad():
            net(x)
            times = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                net(x)
                times.append(time.perf_counter() - t0)
        import resource
        print(json.dumps({'size': a.size, 'threads': a.threads, 'ms': [t * 1e3 for t in times],
                          'best_ms': min(times) * 1e3, 'median_ms': sorted(times)[len(times) // 2] * 1e3,
                          'torch': torch.__version__,
                          'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
        return
    ap.error('nothing to do')


if __name__ == '__main__':
    main()
