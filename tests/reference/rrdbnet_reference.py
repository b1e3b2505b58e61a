#!/usr/bin/env python3
"""RRDBNet and RealESRNet.process / tile_process re-created from
../shared/reference/gpen-semantics.md ("Background super-resolution"), with the official
state-dict names (checkpoint_layouts.json: realesrnet_x1/x2/x4), for the engine's tests.

  rrdbnet_reference.py make OUT.pth --scale S [--num-block N] [--num-feat F] [--seed K]
      writes {'params_ema': state_dict} with random weights (init scaled so activations stay
      of order one through the residual chain) in the official layout (--num-feat 64: the
      RealESRGAN_x2plus / x4plus width)
  rrdbnet_reference.py run CKPT.pth IN.png OUT.png [--tile T] [--fixed]
      RealESRNet.process of the official code on a BGR image: reflect pad, network or
      tile_process (tile_pad 10), the official crop, clamp, round half to even. --fixed applies
      the engine's corrections instead (output exactly s*H x s*W; each tile cut padded to the
      unshuffle multiple, reflect); without --fixed a failing tile exits with status 3 ("sr
      failed", the official code returns None)
  rrdbnet_reference.py cases SPEC.json
      the above for a list of cases in one process (one torch start-up): SPEC is
      {"checkpoints": [{"path", "scale", "num_block", "seed"}],
       "runs": [{"ckpt", "input", "output", "tile", "fixed"}]}; writes each output PNG, or
      output + ".failed" holding the reason where the official code prints 'sr failed'
  rrdbnet_reference.py bench --scale 2 --size 512 [--threads 2] [--runs 1]
      seconds per RRDBNet forward on a random input (the speed peer)
  rrdbnet_reference.py --self-test
      parameter counts of the official layouts (9,601,315 / 9,590,947 / 9,588,355)

Run with /usr/bin/python3 (torch CPU, numpy, cv2).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RDB(nn.Module):
    def __init__(self, nf, gc):
        super().__init__()
        self.conv1 = nn.Conv2d(nf, gc, 3, 1, 1)
        self.conv2 = nn.Conv2d(nf + gc, gc, 3, 1, 1)
        self.conv3 = nn.Conv2d(nf + 2 * gc, gc, 3, 1, 1)
        self.conv4 = nn.Conv2d(nf + 3 * gc, gc, 3, 1, 1)
        self.conv5 = nn.Conv2d(nf + 4 * gc, nf, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, t):
        t1 = self.lrelu(self.conv1(t))
        t2 = self.lrelu(self.conv2(torch.cat((t, t1), 1)))
        t3 = self.lrelu(self.conv3(torch.cat((t, t1, t2), 1)))
        t4 = self.lrelu(self.conv4(torch.cat((t, t1, t2, t3), 1)))
        t5 = self.conv5(torch.cat((t, t1, t2, t3, t4), 1))
        return t5 * 0.2 + t


class RRDB(nn.Module):
    def __init__(self, nf, gc):
        super().__init__()
        self.rdb1 = RDB(nf, gc)
        self.rdb2 = RDB(nf, gc)
        self.rdb3 = RDB(nf, gc)

    def forward(self, t):
        return self.rdb3(self.rdb2(self.rdb1(t))) * 0.2 + t


def unshuffle(x, f):
    b, c, h, w = x.shape
    assert h % f == 0 and w % f == 0
    x = x.view(b, c, h // f, f, w // f, f)
    return x.permute(0, 1, 3, 5, 2, 4).reshape(b, c * f * f, h // f, w // f)


class RRDBNet(nn.Module):
    def __init__(self, scale, num_feat=32, num_block=23, num_grow_ch=32, num_in_ch=3, num_out_ch=3):
        super().__init__()
        self.scale = scale
        cin = num_in_ch * (16 if scale == 1 else 4 if scale == 2 else 1)
        self.conv_first = nn.Conv2d(cin, num_feat, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(num_feat, num_grow_ch) for _ in range(num_block)])
        self.conv_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2, inplace=True)

    def forward(self, x):
        f0 = unshuffle(x, 2) if self.scale == 2 else unshuffle(x, 4) if self.scale == 1 else x
        f = self.conv_first(f0)
        f = f + self.conv_body(self.body(f))
        u = self.lrelu(self.conv_up1(F.interpolate(f, scale_factor=2, mode='nearest')))
        u = self.lrelu(self.conv_up2(F.interpolate(u, scale_factor=2, mode='nearest')))
        return self.conv_last(self.lrelu(self.conv_hr(u)))


def random_state_dict(scale, num_block, seed, num_feat=32):
    torch.manual_seed(seed)
    net = RRDBNet(scale, num_feat=num_feat, num_block=num_block)
    sd = {}
    for k, v in net.state_dict().items():
        if k.endswith('.weight'):
            fan_in = v.shape[1] * v.shape[2] * v.shape[3]
            std = math.sqrt(2.0 / fan_in)
            # The residual branches get 0.1 of He's init (as the official init), the output conv a
            # small one around 0.5, so outputs spread over [0, 1] without saturating.
            if k.startswith('body.'):
                std *= 0.1
            if k.startswith('conv_last'):
                std *= 0.1
            sd[k] = torch.randn(v.shape) * std
        else:
            sd[k] = torch.randn(v.shape) * 0.01
    sd['conv_last.bias'] = torch.full_like(sd['conv_last.bias'], 0.5) + torch.randn(3) * 0.05
    return sd


def load(path):
    ck = torch.load(path, map_location='cpu')
    sd = ck['params_ema']
    scale = {48: 1, 12: 2, 3: 4}[sd['conv_first.weight'].shape[1]]
    nb = 0
    while f'body.{nb}.rdb1.conv1.weight' in sd:
        nb += 1
    net = RRDBNet(scale, num_feat=sd['conv_first.weight'].shape[0], num_block=nb,
                  num_grow_ch=sd['body.0.rdb1.conv1.weight'].shape[0])
    net.load_state_dict(sd, strict=True)
    net.eval()
    return net


def factor(scale):
    return 2 if scale == 2 else 4 if scale == 1 else 1


def pad_to(x, m):
    h, w = x.shape[2:]
    hp, wp = (m - h % m) % m, (m - w % m) % m
    if hp or wp:
        x = F.pad(x, (0, wp, 0, hp), 'reflect')
    return x, hp, wp


def widen(c0, c1, n, m):
    """The engine's correction: a cut not a multiple of m takes up to m - 1 more image pixels,
    after its end, or (at the far border) before its start."""
    need = (m - (c1 - c0) % m) % m
    e = min(need, n - c1)
    return c0 - (need - e), c1 + e


def tile_process(net, x, tile, fixed, pad=10):
    s = net.scale
    _, c, h, w = x.shape
    out = x.new_zeros(1, 3, h * s, w * s)
    ty_n, tx_n = math.ceil(h / tile), math.ceil(w / tile)
    for ty in range(ty_n):
        for tx in range(tx_n):
            y0, x0 = ty * tile, tx * tile
            y1, x1 = min(y0 + tile, h), min(x0 + tile, w)
            cy0, cy1 = max(y0 - pad, 0), min(y1 + pad, h)
            cx0, cx1 = max(x0 - pad, 0), min(x1 + pad, w)
            if fixed:
                cy0, cy1 = widen(cy0, cy1, h, factor(s))
                cx0, cx1 = widen(cx0, cx1, w, factor(s))
            cut = x[:, :, cy0:cy1, cx0:cx1]
            with torch.no_grad():
                o = net(cut)
            oy, ox = (y0 - cy0) * s, (x0 - cx0) * s
            out[:, :, y0 * s:y1 * s, x0 * s:x1 * s] = o[:, :, oy:oy + (y1 - y0) * s, ox:ox + (x1 - x0) * s]
    return out


def process(net, img, tile=0, fixed=False):
    """RealESRNet.process; raises AssertionError where the official code prints 'sr failed'."""
    s = net.scale
    x = torch.from_numpy(np.ascontiguousarray(img[:, :, ::-1].astype(np.float32) / 255.0)).permute(2, 0, 1)[None]
    H, W = img.shape[:2]
    x, hp, wp = pad_to(x, factor(s))
    with torch.no_grad():
        y = tile_process(net, x, tile, fixed) if tile > 0 else net(x)
    if fixed:
        y = y[:, :, :s * H, :s * W]
    else:
        y = y[:, :, 0:s * (H + hp) - hp, 0:s * (W + wp) - wp]
    y = y.squeeze(0).float().clamp_(0, 1).numpy()
    y = np.transpose(y[[2, 1, 0], :, :], (1, 2, 0))
    return np.round(y * 255.0).astype(np.uint8)


def main():
    if '--self-test' in sys.argv:
        want = {1: 9601315, 2: 9590947, 4: 9588355}
        for s, n in want.items():
            got = sum(p.numel() for p in RRDBNet(s).parameters())
            assert got == n, (s, got, n)
        print('ok')
        return
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    m = sub.add_parser('make')
    m.add_argument('out')
    m.add_argument('--scale', type=int, required=True, choices=[1, 2, 4])
    m.add_argument('--num-block', type=int, default=23)
    m.add_argument('--num-feat', type=int, default=32)
    m.add_argument('--seed', type=int, default=1)
    r = sub.add_parser('run')
    r.add_argument('ckpt')
    r.add_argument('inp')
    r.add_argument('out')
    r.add_argument('--tile', type=int, default=0)
    r.add_argument('--fixed', action='store_true')
    cs = sub.add_parser('cases')
    cs.add_argument('spec')
    b = sub.add_parser('bench')
    b.add_argument('--scale', type=int, default=2)
    b.add_argument('--size', type=int, default=512)
    b.add_argument('--threads', type=int, default=2)
    b.add_argument('--runs', type=int, default=1)
    b.add_argument('--num-block', type=int, default=23)
    a = ap.parse_args()
    torch.set_num_threads(1 if a.cmd != 'bench' else a.threads)
    if a.cmd == 'make':
        sd = random_state_dict(a.scale, a.num_block, a.seed, a.num_feat)
        tmp = a.out + '.tmp'
        torch.save({'params_ema': sd}, tmp)
        os.replace(tmp, a.out)
    elif a.cmd == 'run':
        import cv2
        net = load(a.ckpt)
        img = cv2.imread(a.inp, cv2.IMREAD_COLOR)
        try:
            out = process(net, img, a.tile, a.fixed)
        except (AssertionError, RuntimeError) as e:
            print('sr failed', e)
            sys.exit(3)
        cv2.imwrite(a.out, out)
        print(json.dumps({'shape': list(out.shape)}))
    elif a.cmd == 'cases':
        import cv2
        spec = json.load(open(a.spec))
        for c in spec['checkpoints']:
            sd = random_state_dict(c['scale'], c['num_block'], c['seed'])
            torch.save({'params_ema': sd}, c['path'] + '.tmp')
            os.replace(c['path'] + '.tmp', c['path'])
        nets = {}
        for r in spec['runs']:
            if r['ckpt'] not in nets:
                nets[r['ckpt']] = load(r['ckpt'])
            img = cv2.imread(r['input'], cv2.IMREAD_COLOR)
            try:
                out = process(nets[r['ckpt']], img, r.get('tile', 0), r.get('fixed', False))
                cv2.imwrite(r['output'], out)
            except (AssertionError, RuntimeError) as e:
                open(r['output'] + '.failed', 'w').write('sr failed: %s\n' % e)
    else:
        net = RRDBNet(a.scale, num_block=a.num_block)
        net.load_state_dict(random_state_dict(a.scale, a.num_block, 1))
        net.eval()
        x = torch.rand(1, 3, a.size, a.size)
        with torch.no_grad():
            net(x[:, :, :64, :64])
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(a.runs):
                net(x)
            dt = (time.perf_counter() - t0) / a.runs
            cpu = (time.process_time() - c0) / a.runs
        print(json.dumps({'seconds': dt, 'cpu_seconds': cpu, 'scale': a.scale, 'size': a.size, 'threads': a.threads}))


if __name__ == '__main__':
    main()
