#!/usr/bin/python3
"""PyTorch reference of RetinaFace (phase 'test') as GPEN uses it, written from
../shared/reference/gpen-semantics.md: mobilenet0.25 and ResNet-50 backbones, FPN,
SSH, heads, priors, decoding, score threshold, py_cpu_nms (+1 area convention),
top-k, and GPEN's detect() downscaling of large images. Module names reproduce the
Pytorch_Retinaface state-dict keys, so real checkpoints load with strict=True.

  retinaface_reference.py --checkpoint X.pth IMAGE... --json     detections as JSON lines
  retinaface_reference.py --checkpoint X.pth IMAGE... --bench    timing
  retinaface_reference.py --self-test                             layouts + real-weight check

Landmarks in the JSON are interleaved per point: [x1, y1, x2, y2, ..., x5, y5] in the order
left eye, right eye, nose, left mouth corner, right mouth corner. (GPEN's detect() itself
returns them as [x1..x5, y1..y5]; that is only a reshape.) Scores are the softmax face
probabilities (GPEN's detect() divides the score column by its resize factor too, a quirk
that only matters for images it shrinks; it is not reproduced here).
"""
import argparse
import json
import math
import os
import resource
import sys
import time
from itertools import product

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared'))
LAYOUTS_JSON = os.path.join(SHARED, 'reference', 'checkpoint_layouts.json')
MNET_WEIGHTS = os.path.join(SHARED, 'models', 'retinaface-mobilenet0.25.pth')

MEAN_BGR = (104, 117, 123)
MIN_SIZES = ((16, 32), (64, 128), (256, 512))
STEPS = (8, 16, 32)
VARIANCES = (0.1, 0.2)


# ----------------------------------------------------------------------------- building blocks

def conv_bn_act(cin, cout, k, stride, slope, groups=1, act=True):
    """Conv (no bias) + BatchNorm [+ LeakyReLU(slope)], Sequential indices 0, 1[, 2]."""
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.LeakyReLU(slope))
    return layers


def conv_dw(cin, cout, stride, slope=0.1):
    """Depthwise 3x3 + BN + act, then pointwise 1x1 + BN + act (indices 0..5)."""
    return nn.Sequential(*conv_bn_act(cin, cin, 3, stride, slope, groups=cin),
                         *conv_bn_act(cin, cout, 1, 1, slope))


class MobileNet025(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(
            nn.Sequential(*conv_bn_act(3, 8, 3, 2, 0.1)),
            conv_dw(8, 16, 1), conv_dw(16, 32, 2), conv_dw(32, 32, 1),
            conv_dw(32, 64, 2), conv_dw(64, 64, 1))
        self.stage2 = nn.Sequential(conv_dw(64, 128, 2), *[conv_dw(128, 128, 1) for _ in range(5)])
        self.stage3 = nn.Sequential(conv_dw(128, 256, 2), conv_dw(256, 256, 1))

    def forward(self, x, trace=None):
        outs = []
        for sname in ('stage1', 'stage2', 'stage3'):
            for i, block in enumerate(getattr(self, sname)):
                x = block(x)
                if trace is not None:
                    trace['body.%s.%d' % (sname, i)] = x
            outs.append(x)
        return outs


class Bottleneck(nn.Module):
    """torchvision ResNet-50 v1.5 bottleneck: the stride sits on the 3x3 conv."""

    def __init__(self, cin, planes, stride):
        super().__init__()
        cout = planes * 4
        self.conv1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        idn = x if self.downsample is None else self.downsample(x)
        return F.relu(y + idn)


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for li, (planes, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), 1):
            layer = []
            for b in range(blocks):
                layer.append(Bottleneck(cin, planes, stride if b == 0 else 1))
                cin = planes * 4
            setattr(self, 'layer%d' % li, nn.Sequential(*layer))

    def forward(self, x, trace=None):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, 2, 1)
        if trace is not None:
            trace['body.stem'] = x
        outs = []
        for li in range(1, 5):
            x = getattr(self, 'layer%d' % li)(x)
            if trace is not None:
                trace['body.layer%d' % li] = x
            if li >= 2:
                outs.append(x)
        return outs


class FPN(nn.Module):
    def __init__(self, in_list, cout):
        super().__init__()
        s = 0.1 if cout <= 64 else 0.0
        self.output1 = nn.Sequential(*conv_bn_act(in_list[0], cout, 1, 1, s))
        self.output2 = nn.Sequential(*conv_bn_act(in_list[1], cout, 1, 1, s))
        self.output3 = nn.Sequential(*conv_bn_act(in_list[2], cout, 1, 1, s))
        self.merge1 = nn.Sequential(*conv_bn_act(cout, cout, 3, 1, s))
        self.merge2 = nn.Sequential(*conv_bn_act(cout, cout, 3, 1, s))

    def forward(self, feats, trace=None):
        o1 = self.output1(feats[0])
        o2 = self.output2(feats[1])
        o3 = self.output3(feats[2])
        if trace is not None:
            trace['fpn.output1'], trace['fpn.output2'], trace['fpn.output3'] = o1, o2, o3
        o2 = self.merge2(o2 + F.interpolate(o3, size=[o2.shape[2], o2.shape[3]], mode='nearest'))
        o1 = self.merge1(o1 + F.interpolate(o2, size=[o1.shape[2], o1.shape[3]], mode='nearest'))
        return [o1, o2, o3]


class SSH(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        s = 0.1 if cout <= 64 else 0.0
        self.conv3X3 = nn.Sequential(*conv_bn_act(cin, cout // 2, 3, 1, s, act=False))
        self.conv5X5_1 = nn.Sequential(*conv_bn_act(cin, cout // 4, 3, 1, s))
        self.conv5X5_2 = nn.Sequential(*conv_bn_act(cout // 4, cout // 4, 3, 1, s, act=False))
        self.conv7X7_2 = nn.Sequential(*conv_bn_act(cout // 4, cout // 4, 3, 1, s))
        self.conv7x7_3 = nn.Sequential(*conv_bn_act(cout // 4, cout // 4, 3, 1, s, act=False))

    def forward(self, x):
        a = self.conv3X3(x)
        t = self.conv5X5_1(x)
        b = self.conv5X5_2(t)
        c = self.conv7x7_3(self.conv7X7_2(t))
        return F.relu(torch.cat([a, b, c], dim=1))


class Head(nn.Module):
    """1x1 conv with bias; the attribute name matches the checkpoints."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1x1 = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        return self.conv1x1(x)


class RetinaFace(nn.Module):
    def __init__(self, backbone='mobilenet0.25'):
        super().__init__()
        self.backbone = backbone
        if backbone == 'mobilenet0.25':
            self.body, in_ch, out_ch = MobileNet025(), 32, 64
        elif backbone == 'resnet50':
            self.body, in_ch, out_ch = ResNet50(), 256, 256
        else:
            raise ValueError('unknown backbone %r' % backbone)
        self.fpn = FPN([in_ch * 2, in_ch * 4, in_ch * 8], out_ch)
        self.ssh1, self.ssh2, self.ssh3 = SSH(out_ch, out_ch), SSH(out_ch, out_ch), SSH(out_ch, out_ch)
        self.ClassHead = nn.ModuleList([Head(out_ch, 4) for _ in range(3)])
        self.BboxHead = nn.ModuleList([Head(out_ch, 8) for _ in range(3)])
        self.LandmarkHead = nn.ModuleList([Head(out_ch, 20) for _ in range(3)])

    def forward(self, x, trace=None):
        """x: (N,3,H,W) BGR minus mean. Returns loc (N,P,4), conf (N,P,2) softmaxed, landms (N,P,10)."""
        feats = self.body(x, trace)
        if trace is not None:
            for i, f in enumerate(feats, 1):
                trace['body.out%d' % i] = f
        fpn = self.fpn(feats, trace)
        ssh = [self.ssh1(fpn[0]), self.ssh2(fpn[1]), self.ssh3(fpn[2])]
        locs, confs, lms = [], [], []
        for i in range(3):
            c, b, l = self.ClassHead[i](ssh[i]), self.BboxHead[i](ssh[i]), self.LandmarkHead[i](ssh[i])
            if trace is not None:
                trace['fpn.out%d' % (i + 1)] = fpn[i]
                trace['ssh%d' % (i + 1)] = ssh[i]
                trace['head.class%d' % (i + 1)] = c
                trace['head.bbox%d' % (i + 1)] = b
                trace['head.landmark%d' % (i + 1)] = l
            n = x.shape[0]
            # (N, A*k, H, W) -> (N, H*W*A, k): priors run over (y, x, anchor)
            confs.append(c.permute(0, 2, 3, 1).reshape(n, -1, 2))
            locs.append(b.permute(0, 2, 3, 1).reshape(n, -1, 4))
            lms.append(l.permute(0, 2, 3, 1).reshape(n, -1, 10))
        loc, logits, landms = torch.cat(locs, 1), torch.cat(confs, 1), torch.cat(lms, 1)
        conf = F.softmax(logits, dim=-1)
        if trace is not None:
            trace['loc'], trace['conf_logits'], trace['conf'], trace['landms'] = loc, logits, conf, landms
        return loc, conf, landms


# ----------------------------------------------------------------------------- weights

def unwrap_state_dict(obj):
    for _ in range(4):
        if not isinstance(obj, dict) or any(torch.is_tensor(v) for v in obj.values()):
            break
        for key in ('state_dict', 'model', 'net'):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
        else:
            dicts = [v for v in obj.values() if isinstance(v, dict)]
            if len(dicts) != 1:
                raise ValueError('cannot find the state dict among keys %s' % list(obj)[:10])
            obj = dicts[0]
    return {(k[7:] if k.startswith('module.') else k): v for k, v in obj.items()}


def build(backbone):
    return RetinaFace(backbone).eval()


def load(path):
    """Load a Pytorch_Retinaface checkpoint (any of the two torch.save formats, any
    saved device) strictly; the backbone is recognised from the key names."""
    sd = unwrap_state_dict(torch.load(path, map_location='cpu'))
    backbone = 'resnet50' if 'body.conv1.weight' in sd else 'mobilenet0.25'
    net = build(backbone)
    net.load_state_dict(sd, strict=True)
    return net


def random_state_dict(backbone, seed, calibrate_input=None):
    """Random weights in the official layout: He-normal convs, BN gamma in [0.5, 1.5],
    beta/head biases N(0, 0.1). With calibrate_input (N,3,H,W), each BN's running mean and
    variance (floored at 0.05) are set from its own eval-mode input in one forward pass on
    it, so activations stay O(1) through the 50 layers instead of blowing up or dying."""
    g = torch.Generator().manual_seed(int(seed))
    net = build(backbone)
    sd = {}
    for name, t in net.state_dict().items():
        if name.endswith('num_batches_tracked'):
            v = torch.zeros_like(t)
        elif t.dim() == 4:
            fan_in = t.shape[1] * t.shape[2] * t.shape[3]
            v = torch.randn(t.shape, generator=g) * math.sqrt(2.0 / fan_in)
        elif name.endswith('running_var') or (name.endswith('.weight') and t.dim() == 1):
            v = torch.rand(t.shape, generator=g) + 0.5
        else:                                # BN beta, running_mean, head biases
            v = torch.randn(t.shape, generator=g) * 0.1
        sd[name] = v.to(t.dtype)
    if calibrate_input is not None:
        net.load_state_dict(sd, strict=True)

        def set_stats(m, inputs):
            # eval-mode input of this BN: stats set here are exactly the ones it then uses
            x = inputs[0]
            m.running_mean.copy_(x.mean(dim=(0, 2, 3)))
            m.running_var.copy_(x.var(dim=(0, 2, 3), unbiased=False).clamp_min(0.05))
        hooks = [m.register_forward_pre_hook(set_stats) for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
        with torch.no_grad():
            net(calibrate_input)
        for h in hooks:
            h.remove()
        sd = {k: v.clone() for k, v in net.state_dict().items()}
    return sd


def official_layout(backbone):
    return [(k, list(v.shape)) for k, v in build(backbone).state_dict().items()]


def check_official_layouts(json_path=LAYOUTS_JSON, verbose=True):
    with open(json_path) as f:
        layouts = json.load(f)
    for name, bb in (('RetinaFace-mobilenet0.25', 'mobilenet0.25'), ('RetinaFace-R50', 'resnet50')):
        want = sorted((n, tuple(s)) for n, s, _ in layouts[name]['tensors'])
        have = sorted((n, tuple(s)) for n, s in official_layout(bb))
        if want != have:
            raise AssertionError('%s layout differs: missing %s extra %s' % (
                name, sorted(set(want) - set(have))[:5], sorted(set(have) - set(want))[:5]))
        if verbose:
            print('%-25s %3d tensors match' % (name, len(want)))


# ----------------------------------------------------------------------------- priors / decode / NMS

def priors(h, w):
    """(P, 4) float32 (cx, cy, sx, sy) normalised by the image size, in the head order
    (level, y, x, min_size). Computed in double as the official PriorBox, then cast."""
    out = []
    for step, sizes in zip(STEPS, MIN_SIZES):
        fh, fw = math.ceil(h / step), math.ceil(w / step)
        for i, j in product(range(fh), range(fw)):
            for m in sizes:
                out += [(j + 0.5) * step / w, (i + 0.5) * step / h, m / w, m / h]
    return torch.tensor(out, dtype=torch.float32).reshape(-1, 4)


def decode_boxes(loc, pri):
    """Official operation order (x2 = x1 + size, not center + size/2)."""
    v0, v1 = VARIANCES
    b = torch.cat((pri[:, :2] + loc[:, :2] * v0 * pri[:, 2:], pri[:, 2:] * torch.exp(loc[:, 2:] * v1)), 1)
    b[:, :2] -= b[:, 2:] / 2
    b[:, 2:] += b[:, :2]
    return b


def decode_landmarks(pre, pri):
    v0 = VARIANCES[0]
    return torch.cat([pri[:, :2] + pre[:, 2 * j:2 * j + 2] * v0 * pri[:, 2:] for j in range(5)], 1)


def py_cpu_nms(dets, thresh):
    """Greedy NMS over (x1, y1, x2, y2, score) rows, areas with the +1 pixel convention."""
    x1, y1, x2, y2, scores = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3], dets[:, 4]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.maximum(0.0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]) + 1)
        h = np.maximum(0.0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]) + 1)
        inter = w * h
        ovr = inter / (areas[i] + areas[rest] - inter)
        order = rest[np.where(ovr <= thresh)[0]]
    return keep


# ----------------------------------------------------------------------------- detect

def read_bgr(path):
    """Image file -> HWC uint8 BGR (alpha dropped, gray expanded)."""
    import cv2
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ValueError('cannot read image %s' % path)
    if img.dtype != np.uint8:
        raise ValueError('%s: only 8-bit images are supported' % path)
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    elif img.shape[2] == 4:
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
    return img


def net_input(img_bgr, max_side=1500, target_side=1000):
    """GPEN detect(): float32 image, shrunk (cv2 bilinear with fx=fy=ss, on the float image)
    when the longer side exceeds max_side, minus the BGR mean; -> ((1,3,h,w) tensor, ss)."""
    import cv2
    img = np.float32(img_bgr)
    ss = 1.0
    if max_side and max(img.shape[:2]) > max_side:
        ss = float(target_side) / max(img.shape[:2])
        img = cv2.resize(img, (0, 0), fx=ss, fy=ss)
    img -= MEAN_BGR
    return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))).unsqueeze(0), ss


def postprocess(loc, conf, landms, h, w, ss=1.0, conf_thresh=0.9, nms_thresh=0.4,
                top_k=5000, keep_top_k=750, trace=None):
    """Single image outputs (P,4),(P,2),(P,10) of an h x w net input -> detections in the
    coordinates of the original image (divided by ss)."""
    pri = priors(h, w)
    if pri.shape[0] != loc.shape[0]:
        raise ValueError('prior count %d != head rows %d' % (pri.shape[0], loc.shape[0]))
    boxes = (decode_boxes(loc, pri) * torch.tensor([w, h, w, h], dtype=torch.float32)).numpy()
    lms = (decode_landmarks(landms, pri) * torch.tensor([w, h] * 5, dtype=torch.float32)).numpy()
    scores = conf[:, 1].numpy()
    if trace is not None:
        trace['priors'], trace['boxes_decoded'], trace['landms_decoded'] = pri, boxes, lms
    inds = np.where(scores > conf_thresh)[0]
    boxes, lms, scores = boxes[inds], lms[inds], scores[inds]
    order = scores.argsort()[::-1][:top_k]
    boxes, lms, scores = boxes[order], lms[order], scores[order]
    dets = np.hstack((boxes, scores[:, None])).astype(np.float32, copy=False)
    if trace is not None:
        trace['candidates'] = dets.copy()
    keep = py_cpu_nms(dets, nms_thresh)
    dets, lms = dets[keep][:keep_top_k], lms[keep][:keep_top_k]
    faces = []
    for d, l in zip(dets, lms):
        faces.append({'box': [float(v) for v in (d[:4] / ss)], 'score': float(d[4]),
                      'landmarks': [float(v) for v in (l / ss)]})
    return faces


def detect(net, img_bgr, conf_thresh=0.9, nms_thresh=0.4, top_k=5000, keep_top_k=750,
           max_side=1500, target_side=1000, trace=None, device=None):
    """device: where `net` lives (None: the CPU); the input goes there and the head outputs come
    back for the host post-processing (priors, decode, NMS), as the official code does."""
    x, ss = net_input(img_bgr, max_side, target_side)
    if trace is not None:
        trace['input'], trace['ss'] = x, ss
    with torch.no_grad():
        if device is not None and device.type != 'cpu':
            loc, conf, landms = (t.cpu() for t in net(x.to(device), trace))
        else:
            loc, conf, landms = net(x, trace)
    return postprocess(loc[0], conf[0], landms[0], x.shape[2], x.shape[3], ss, conf_thresh,
                       nms_thresh, top_k, keep_top_k, trace)


def detect_json(net, path, **kw):
    img = read_bgr(path)
    trace = {}
    faces = detect(net, img, trace=trace, **kw)
    return {'image': os.path.basename(path), 'width': int(img.shape[1]), 'height': int(img.shape[0]),
            'net_input': [int(trace['input'].shape[3]), int(trace['input'].shape[2])],
            'faces': faces}


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def self_test():
    check_official_layouts()
    if os.path.exists(MNET_WEIGHTS):
        net = load(MNET_WEIGHTS)
        r = detect_json(net, os.path.join(SHARED, 'images', 'solvay_1927.png'))
        print('solvay_1927.png: %d faces' % len(r['faces']))
        assert len(r['faces']) == 29, len(r['faces'])
    sd = random_state_dict('resnet50', 0, calibrate_input=torch.randn(1, 3, 64, 64) * 50)
    net = build('resnet50')
    net.load_state_dict(sd, strict=True)
    with torch.no_grad():
        loc, conf, lm = net(torch.randn(1, 3, 64, 48) * 50)
    assert loc.shape == (1, priors(64, 48).shape[0], 4)
    print('self-test OK')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('images', nargs='*')
    ap.add_argument('--checkpoint', default=MNET_WEIGHTS)
    ap.add_argument('--json', action='store_true', help='print one JSON object per image')
    ap.add_argument('--threshold', type=float, default=0.9)
    ap.add_argument('--nms', type=float, default=0.4)
    ap.add_argument('--max-side', type=int, default=1500, help='shrink when the longer side exceeds this (0: never)')
    ap.add_argument('--target-side', type=int, default=1000)
    ap.add_argument('--bench', action='store_true', help='time detect() per image; prints JSON')
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=2)
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--device', choices=('cpu', 'cuda'), default='cpu',
                    help='--bench: where the network runs (pre- and post-processing stay on the host, '
                         'as in the official code; fp32)')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args(argv)
    if a.self_test:
        self_test()
        return 0
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.device == 'cuda' and not torch.cuda.is_available():
        print(json.dumps({'error': 'torch %s has no usable CUDA device (torch.cuda.is_available() is False)'
                          % torch.__version__, 'device': a.device}))
        return 2
    dev = torch.device(a.device)
    mem = {}
    if a.device == 'cuda':
        torch.backends.cudnn.benchmark = True   # one photo size: let cuDNN pick its fastest kernels
        torch.zeros(1, device=dev)               # the context exists before the first reading
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        free_before, total = torch.cuda.mem_get_info()
        mem = {'device_name': torch.cuda.get_device_name(dev), 'device_free_before_bytes': int(free_before),
               'device_total_bytes': int(total)}
    net = load(a.checkpoint).to(dev)
    kw = dict(conf_thresh=a.threshold, nms_thresh=a.nms, max_side=a.max_side, target_side=a.target_side)
    for path in a.images:
        if a.bench:
            img = read_bgr(path)
            times = []
            for i in range(a.warmup + a.runs):
                t = time.perf_counter()
                faces = detect(net, img, device=dev, **kw)   # the .cpu() of the outputs synchronises
                if i >= a.warmup:
                    times.append(time.perf_counter() - t)
            r = {'image': os.path.basename(path), 'backbone': net.backbone,
                 'width': img.shape[1], 'height': img.shape[0], 'faces': len(faces),
                 'device': a.device, 'threads': torch.get_num_threads(), 'runs': a.runs,
                 'median_ms': 1e3 * float(np.median(times)), 'min_ms': 1e3 * min(times),
                 'peak_rss_mb': round(peak_rss_mb(), 1), 'torch': torch.__version__}
            if a.device == 'cuda':
                free_after, _ = torch.cuda.mem_get_info()
                r.update(mem, peak_device_bytes=int(torch.cuda.max_memory_allocated()),
                         device_free_after_bytes=int(free_after),
                         device_used_bytes=int(max(mem['device_free_before_bytes'] - free_after, 0)))
            print(json.dumps(r))
        else:
            r = detect_json(net, path, **kw)
            if a.json:
                print(json.dumps(r))
            else:
                print('%s: %dx%d, %d faces' % (r['image'], r['width'], r['height'], len(r['faces'])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
