#!/usr/bin/python3
"""PyTorch reference of the official GPEN FullGenerator (CVPR 2021), written from
../shared/reference/gpen-semantics.md. The module tree reproduces the official
state-dict key names and shapes, so an official checkpoint loads with strict=True.

Arithmetic follows the official code path (per-sample modulated weights, grouped
convolution, transposed convolution + FIR blur for upsampling), so results match
the official implementation to float rounding. Noise inputs are the encoder
features, never random noise.

Run `gpen_reference.py --self-test` to check the layouts of GPEN-BFR-256/512/1024
against checkpoint_layouts.json; `--help` for inference and benchmarking.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared'))
LAYOUTS_JSON = os.path.join(SHARED, 'reference', 'checkpoint_layouts.json')

SQRT2 = math.sqrt(2.0)
# 'convT': the official F.conv_transpose2d (default, bitwise like the official code);
# 'conv': an equivalent direct convolution, for benchmarks only (differs by float rounding)
UPSAMPLE_IMPL = 'convT'
OFFICIAL_CONFIGS = {
    'GPEN-BFR-256': dict(size=256, cm=1, narrow=0.5),
    'GPEN-BFR-512': dict(size=512, cm=2, narrow=1.0),
    'GPEN-BFR-1024': dict(size=1024, cm=2, narrow=1.0),
}


# ----------------------------------------------------------------------------- primitives

def fir_kernel():
    """k = outer([1,3,3,1], [1,3,3,1]) / 64."""
    a = torch.tensor([1.0, 3.0, 3.0, 1.0], dtype=torch.float32)
    k = a[None, :] * a[:, None]
    return k / k.sum()


def upfirdn(x, kernel, up, pad0, pad1, down):
    """Zero-insert by `up`, zero-pad (pad0 before, pad1 after, both axes), true
    convolution with `kernel` (flipped), keep every `down`-th sample."""
    n, c, h, w = x.shape
    if up > 1:
        z = x.new_zeros(n, c, h, up, w, up)
        z[:, :, :, 0, :, 0] = x
        x = z.reshape(n, c, h * up, w * up)
    x = F.pad(x, [pad0, pad1, pad0, pad1])
    kh, kw = kernel.shape
    wk = torch.flip(kernel, [0, 1]).reshape(1, 1, kh, kw).to(x.dtype)
    x = F.conv2d(x.reshape(n * c, 1, x.shape[2], x.shape[3]), wk)
    x = x.reshape(n, c, x.shape[2], x.shape[3])
    if down > 1:
        x = x[:, :, ::down, ::down]
    return x


def flrelu(x, bias):
    """sqrt(2) * leaky_relu(x + b, 0.2), b broadcast over the channel axis (dim 1)."""
    shape = [1, -1] + [1] * (x.dim() - 2)
    return F.leaky_relu(x + bias.reshape(shape), 0.2) * SQRT2


class FusedLeakyReLU(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return flrelu(x, self.bias)


class Blur(nn.Module):
    """FIR filter held as the buffer `kernel` (k, or 4k when it follows an upsampling)."""

    def __init__(self, pad0, pad1, gain=1.0):
        super().__init__()
        self.register_buffer('kernel', fir_kernel() * gain)
        self.pad = (pad0, pad1)

    def forward(self, x):
        return upfirdn(x, self.kernel, 1, self.pad[0], self.pad[1], 1)


class Upsample(nn.Module):
    """2x FIR upsampling of the ToRGB skip path: upfirdn(x, 4k, up 2, pad 2/1)."""

    def __init__(self):
        super().__init__()
        self.register_buffer('kernel', fir_kernel() * 4.0)

    def forward(self, x):
        return upfirdn(x, self.kernel, 2, 2, 1, 1)


class EqualConv2d(nn.Module):
    def __init__(self, cin, cout, k, stride=1, padding=0, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(cout, cin, k, k))
        self.bias = nn.Parameter(torch.zeros(cout)) if bias else None
        self.scale = 1.0 / math.sqrt(cin * k * k)
        self.stride, self.padding = stride, padding

    def forward(self, x):
        return F.conv2d(x, self.weight * self.scale, bias=self.bias,
                        stride=self.stride, padding=self.padding)


class EqualLinear(nn.Module):
    def __init__(self, din, dout, lr_mul=1.0, activation=False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dout, din))
        self.bias = nn.Parameter(torch.zeros(dout))
        self.scale = lr_mul / math.sqrt(din)
        self.lr_mul = lr_mul
        self.activation = activation

    def forward(self, x):
        if self.activation:
            return flrelu(F.linear(x, self.weight * self.scale), self.bias * self.lr_mul)
        return F.linear(x, self.weight * self.scale, bias=self.bias * self.lr_mul)


class PixelNorm(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=1, keepdim=True) + 1e-8)


# ----------------------------------------------------------------------------- decoder blocks

class ModulatedConv2d(nn.Module):
    def __init__(self, cin, cout, k, style_dim, demodulate=True, upsample=False):
        super().__init__()
        self.cin, self.cout, self.k = cin, cout, k
        self.demodulate, self.upsample = demodulate, upsample
        self.scale = 1.0 / math.sqrt(cin * k * k)
        self.padding = k // 2
        self.weight = nn.Parameter(torch.zeros(1, cout, cin, k, k))
        self.modulation = EqualLinear(style_dim, cin)
        if upsample:
            # transposed conv gives 2H+1; the 4k blur with pad 1/1 brings it to 2H
            self.blur = Blur(1, 1, gain=4.0)

    def forward(self, x, w, trace=None, name=None):
        n, cin, h, wd = x.shape
        s = self.modulation(w)                                   # (N, cin)
        weight = self.scale * self.weight * s.reshape(n, 1, cin, 1, 1)
        d = None
        if self.demodulate:
            d = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)  # (N, cout)
            weight = weight * d.reshape(n, self.cout, 1, 1, 1)
        if trace is not None:
            trace[name + '.style'] = s
            if d is not None:
                trace[name + '.demod'] = d
        xg = x.reshape(1, n * cin, h, wd)
        if self.upsample and UPSAMPLE_IMPL == 'conv':
            # same sum as the transposed conv, as a direct conv over the zero-inserted input
            # (torch's CPU conv_transpose2d is very slow without an optimised BLAS)
            z = xg.new_zeros(1, n * cin, h, 2, wd, 2)
            z[:, :, :, 0, :, 0] = xg
            z = F.pad(z.reshape(1, n * cin, 2 * h, 2 * wd)[:, :, :2 * h - 1, :2 * wd - 1], [2, 2, 2, 2])
            wf = torch.flip(weight, [3, 4]).reshape(n * self.cout, cin, self.k, self.k)
            out = F.conv2d(z, wf, groups=n).reshape(n, self.cout, 2 * h + 1, 2 * wd + 1)
            if trace is not None:
                trace[name + '.convT'] = out
            out = self.blur(out)
        elif self.upsample:
            wt = weight.transpose(1, 2).reshape(n * cin, self.cout, self.k, self.k)
            out = F.conv_transpose2d(xg, wt, padding=0, stride=2, groups=n)
            out = out.reshape(n, self.cout, out.shape[2], out.shape[3])
            if trace is not None:
                trace[name + '.convT'] = out
            out = self.blur(out)
        else:
            wg = weight.reshape(n * self.cout, cin, self.k, self.k)
            out = F.conv2d(xg, wg, padding=self.padding, groups=n)
            out = out.reshape(n, self.cout, h, wd)
        return out


class NoiseInjection(nn.Module):
    """isconcat=True: the 'noise' (an encoder feature) is appended as extra channels."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, x, noise):
        return torch.cat((x, self.weight * noise), dim=1)


class StyledConv(nn.Module):
    def __init__(self, cin, cout, style_dim, upsample=False):
        super().__init__()
        self.conv = ModulatedConv2d(cin, cout, 3, style_dim, demodulate=True, upsample=upsample)
        self.noise = NoiseInjection()
        self.activate = FusedLeakyReLU(2 * cout)

    def forward(self, x, w, noise, trace=None, name=None):
        out = self.conv(x, w, trace, name)
        if trace is not None:
            trace[name + '.modconv'] = out
        out = self.activate(self.noise(out, noise))
        if trace is not None:
            trace[name] = out
        return out


class ToRGB(nn.Module):
    def __init__(self, cin, style_dim, upsample=True):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))
        if upsample:
            self.upsample = Upsample()
        self.conv = ModulatedConv2d(cin, 3, 1, style_dim, demodulate=False)

    def forward(self, x, w, skip=None, trace=None, name=None):
        out = self.conv(x, w, trace, name) + self.bias
        if skip is not None:
            out = out + self.upsample(skip)
        if trace is not None:
            trace[name] = out
        return out


class ConstantInput(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.input = nn.Parameter(torch.zeros(1, channels, 4, 4))

    def forward(self, batch):
        return self.input.repeat(batch, 1, 1, 1)


def channel_table(cm, narrow):
    t = {r: int(512 * narrow) for r in (4, 8, 16, 32)}
    t.update({64: int(256 * cm * narrow), 128: int(128 * cm * narrow), 256: int(64 * cm * narrow),
              512: int(32 * cm * narrow), 1024: int(16 * cm * narrow), 2048: int(8 * cm * narrow)})
    return t


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_mlp, cm, narrow):
        super().__init__()
        self.size, self.style_dim = size, style_dim
        self.log_size = int(math.log2(size))
        ch = channel_table(cm, narrow)
        self.style = nn.Sequential(PixelNorm(), *[
            EqualLinear(style_dim, style_dim, lr_mul=0.01, activation=True) for _ in range(n_mlp)])
        self.input = ConstantInput(ch[4])
        self.conv1 = StyledConv(ch[4], ch[4], style_dim)
        self.to_rgb1 = ToRGB(2 * ch[4], style_dim, upsample=False)
        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        cin = ch[4]
        for i in range(3, self.log_size + 1):
            cout = ch[2 ** i]
            self.convs.append(StyledConv(2 * cin, cout, style_dim, upsample=True))
            self.convs.append(StyledConv(2 * cout, cout, style_dim))
            self.to_rgbs.append(ToRGB(2 * cout, style_dim))
            cin = cout

    def forward(self, z, feats, trace=None):
        """z: (N, style_dim) encoder code; feats[r] = encoder feature at resolution r."""
        w = self.style(z)
        if trace is not None:
            trace['w'] = w
        x = self.input(z.shape[0])
        x = self.conv1(x, w, feats[4], trace, 'gen.conv1')
        rgb = self.to_rgb1(x, w, None, trace, 'gen.to_rgb1')
        for i in range(len(self.to_rgbs)):
            r = 2 ** (i + 3)
            x = self.convs[2 * i](x, w, feats[r], trace, 'gen.convs.%d' % (2 * i))
            x = self.convs[2 * i + 1](x, w, feats[r], trace, 'gen.convs.%d' % (2 * i + 1))
            rgb = self.to_rgbs[i](x, w, rgb, trace, 'gen.to_rgbs.%d' % i)
        return rgb


class EncoderConv(nn.Sequential):
    """Official ConvLayer: [Blur(k, pad 2/2)] + EqualConv2d(no bias) + FusedLeakyReLU."""

    def __init__(self, cin, cout, k, downsample):
        if downsample:
            super().__init__(Blur(2, 2), EqualConv2d(cin, cout, k, stride=2, padding=0, bias=False),
                             FusedLeakyReLU(cout))
        else:
            super().__init__(EqualConv2d(cin, cout, k, stride=1, padding=k // 2, bias=False),
                             FusedLeakyReLU(cout))


class FullGenerator(nn.Module):
    def __init__(self, size, style_dim=512, n_mlp=8, channel_multiplier=2, narrow=1.0, isconcat=True):
        super().__init__()
        if not isconcat:
            raise ValueError('only isconcat=True (the released GPEN models) is implemented')
        if size < 8 or size & (size - 1):
            raise ValueError('size must be a power of two >= 8, got %r' % size)
        self.size, self.style_dim, self.n_mlp = size, style_dim, n_mlp
        self.cm, self.narrow = channel_multiplier, narrow
        self.log_size = int(math.log2(size))
        ch = channel_table(channel_multiplier, narrow)
        self.generator = Generator(size, style_dim, n_mlp, channel_multiplier, narrow)
        self.ecd0 = nn.Sequential(EncoderConv(3, ch[size], 1, downsample=False))
        cin = ch[size]
        for j in range(1, self.log_size - 1):
            cout = ch[size >> j]
            setattr(self, 'ecd%d' % j, nn.Sequential(EncoderConv(cin, cout, 3, downsample=True)))
            cin = cout
        self.final_linear = nn.Sequential(EqualLinear(ch[4] * 16, style_dim, activation=True))

    def forward(self, x, trace=None):
        feats = {}
        h = x
        for j in range(self.log_size - 1):
            h = getattr(self, 'ecd%d' % j)(h)
            feats[self.size >> j] = h
            if trace is not None:
                trace['enc%d' % j] = h
        z = self.final_linear(h.reshape(h.shape[0], -1))
        if trace is not None:
            trace['z'] = z
        out = self.generator(z, feats, trace)
        if trace is not None:
            trace['output'] = out
        return out


# ----------------------------------------------------------------------------- build / load

def build(size, cm, narrow, style_dim=512, n_mlp=8):
    m = FullGenerator(size, style_dim=style_dim, n_mlp=n_mlp, channel_multiplier=cm, narrow=narrow)
    return m.eval()


def official_layout(size, cm, narrow, style_dim=512, n_mlp=8):
    """[(name, shape)] of the state dict that FullGenerator(size, cm, narrow) has."""
    m = build(size, cm, narrow, style_dim, n_mlp)
    return [(k, list(v.shape)) for k, v in m.state_dict().items()]


def param_count(model):
    return sum(p.numel() for p in model.parameters())


def unwrap_state_dict(obj):
    """Find the tensor dict inside a torch.load result and strip `module.` prefixes."""
    for _ in range(4):
        if not isinstance(obj, dict):
            break
        if any(torch.is_tensor(v) for v in obj.values()):
            break
        for key in ('g_ema', 'state_dict', 'params_ema', 'params', 'model', 'net', 'generator'):
            if isinstance(obj.get(key), dict):
                obj = obj[key]
                break
        else:
            dicts = [v for v in obj.values() if isinstance(v, dict)]
            if len(dicts) != 1:
                raise ValueError('cannot find the state dict among keys %s' % list(obj)[:10])
            obj = dicts[0]
    if not isinstance(obj, dict):
        raise ValueError('checkpoint does not hold a state dict (got %s)' % type(obj).__name__)
    return {(k[7:] if k.startswith('module.') else k): v for k, v in obj.items()}


def load_state_dict_file(path):
    return unwrap_state_dict(torch.load(path, map_location='cpu'))


def infer_config(sd):
    """(size, cm, narrow, style_dim, n_mlp) from tensor shapes of a GPEN state dict."""
    n_rgbs = len({k.split('.')[2] for k in sd if k.startswith('generator.to_rgbs.')})
    size = 2 ** (n_rgbs + 2)
    ch4 = sd['generator.input.input'].shape[1]
    narrow = ch4 / 512.0
    style_dim = sd['final_linear.0.weight'].shape[0]
    n_mlp = len({k.split('.')[2] for k in sd if k.startswith('generator.style.')})
    cm = 1
    if size >= 64:
        c64 = sd['generator.convs.6.conv.weight'].shape[1]
        cm = c64 / (256.0 * narrow)
        if abs(cm - round(cm)) < 1e-6:
            cm = int(round(cm))
    return size, cm, narrow, style_dim, n_mlp


def load(path, size=None, cm=None, narrow=None):
    """Build the model that matches the checkpoint at `path` and load it strictly."""
    sd = load_state_dict_file(path)
    isize, icm, inarrow, style_dim, n_mlp = infer_config(sd)
    m = build(size or isize, cm or icm, narrow or inarrow, style_dim, n_mlp)
    m.load_state_dict(sd, strict=True)
    return m


def random_state_dict(size, cm, narrow, seed, style_dim=512, n_mlp=8):
    """A state dict in the official layout with every tensor non-zero and of
    moderate size, so that every term of the computation shows in the output.
    Stored weights follow the official init (N(0,1), mapping N(0,1)/lr_mul);
    biases ~ N(0, 0.1) (effective, after lr_mul); modulation biases 1 + N(0, 0.1);
    noise weights uniform in [0.1, 0.5]; ToRGB weights N(0, 0.3^2) so the summed
    RGB stays mostly inside [-1, 1]; FIR kernels hold the official values."""
    g = torch.Generator().manual_seed(int(seed))
    m = build(size, cm, narrow, style_dim, n_mlp)
    out = {}
    for name, t in m.state_dict().items():
        shape = t.shape

        def randn(std=1.0, mean=0.0):
            return torch.randn(shape, generator=g) * std + mean
        if name.endswith('.kernel'):
            v = t.clone()                      # official FIR values set by the constructor
        elif name.startswith('generator.style.') and name.endswith('.weight'):
            v = randn(100.0)                   # official: randn / lr_mul
        elif name.startswith('generator.style.') and name.endswith('.bias'):
            v = randn(10.0)                    # x lr_mul 0.01 -> effective N(0, 0.1)
        elif name.endswith('modulation.bias'):
            v = randn(0.1, 1.0)
        elif name.endswith('noise.weight'):
            v = torch.rand(shape, generator=g) * 0.4 + 0.1
        elif 'to_rgb' in name and name.endswith('conv.weight'):
            v = randn(0.3)
        elif name.endswith('bias'):
            v = randn(0.1)
        else:
            v = randn(1.0)
        out[name] = v.to(torch.float32).contiguous()
    return out


def random_model(size, cm, narrow, seed, style_dim=512, n_mlp=8):
    m = build(size, cm, narrow, style_dim, n_mlp)
    m.load_state_dict(random_state_dict(size, cm, narrow, seed, style_dim, n_mlp), strict=True)
    return m


# ----------------------------------------------------------------------------- layout check

def check_official_layouts(json_path=LAYOUTS_JSON, verbose=True):
    """Assert that the built models have exactly the official key/shape sets and
    the published parameter counts. Returns {config name: parameter count}."""
    with open(json_path) as f:
        layouts = json.load(f)
    counts = {}
    for name, cfg in OFFICIAL_CONFIGS.items():
        ref = layouts[name]
        c = ref['config']
        assert (c['size'], c['channel_multiplier'], c['narrow']) == (cfg['size'], cfg['cm'], cfg['narrow']), c
        assert (c['style_dim'], c['n_mlp']) == (512, 8), c
        want = sorted((n, tuple(s)) for n, s, _ in ref['tensors'])
        m = build(cfg['size'], cfg['cm'], cfg['narrow'])
        have = sorted((n, tuple(v.shape)) for n, v in m.state_dict().items())
        if want != have:
            missing = sorted(set(want) - set(have))[:5]
            extra = sorted(set(have) - set(want))[:5]
            raise AssertionError('%s layout differs: missing %s extra %s' % (name, missing, extra))
        assert all(d == 'float32' for _, _, d in ref['tensors'])
        counts[name] = param_count(m)
        if verbose:
            print('%-14s %3d tensors match, %d parameters (%.2f M)' %
                  (name, len(want), counts[name], counts[name] / 1e6))
        del m
    assert abs(counts['GPEN-BFR-256'] / 1e6 - 18.9) < 0.05, counts
    assert abs(counts['GPEN-BFR-512'] / 1e6 - 71.0) < 0.05, counts
    return counts


def check_fir_buffers(model):
    """Upsampling blurs hold 4k, downsampling blurs hold k."""
    k = fir_kernel()
    for name, b in model.state_dict().items():
        if name.endswith('.kernel'):
            want = k if name.startswith('ecd') else 4 * k
            assert torch.equal(b, want), name


def self_test():
    counts = check_official_layouts()
    m = build(256, 1, 0.5)
    check_fir_buffers(m)
    # a random checkpoint round-trips through torch.save / load(strict)
    import tempfile
    sd = random_state_dict(32, 1, 0.125, seed=1, style_dim=64)
    assert all(bool((v != 0).all()) for n, v in sd.items() if not n.endswith('.kernel')), 'zero entries'
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, 'x.pth')
        torch.save({'state_dict': {'module.' + k: v for k, v in sd.items()}}, p)
        m2 = load(p)
        assert (m2.size, m2.style_dim) == (32, 64)
    x = torch.rand(2, 3, 32, 32) * 2 - 1
    with torch.no_grad():
        y = m2(x)
    assert y.shape == (2, 3, 32, 32) and torch.isfinite(y).all()
    # the benchmark-only direct-conv upsampling computes the same function
    global UPSAMPLE_IMPL
    with torch.no_grad():
        UPSAMPLE_IMPL = 'conv'
        y2 = m2(x)
        UPSAMPLE_IMPL = 'convT'
    assert float((y - y2).abs().max()) < 1e-5
    # upfirdn sizes from the semantics doc
    t = torch.randn(1, 2, 8, 8)
    assert upfirdn(t, 4 * fir_kernel(), 2, 2, 1, 1).shape[-1] == 16
    assert upfirdn(t, fir_kernel(), 1, 2, 2, 1).shape[-1] == 9
    print('self-test OK', counts)


# ----------------------------------------------------------------------------- pre/post-processing

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


def preprocess(img_bgr, size):
    """Official face_gan.img2tensor after cv2.resize: uint8 BGR HWC -> (1,3,S,S) RGB in [-1,1]."""
    import cv2
    img = cv2.resize(img_bgr, (size, size))          # bilinear (cv2 default); identity when same size
    t = torch.from_numpy(np.ascontiguousarray(img)) / 255.
    t = (t - 0.5) / 0.5
    return t.permute(2, 0, 1).unsqueeze(0).flip(1).contiguous().float()


def postprocess(y):
    """Official face_gan.tensor2img: (1,3,S,S) model space -> HWC uint8 BGR (truncation)."""
    y = y * 0.5 + 0.5
    y = y.squeeze(0).permute(1, 2, 0).flip(2)
    a = np.clip(y.float().cpu().numpy(), 0, 1) * 255.0
    return a.astype(np.uint8)


def load_input(path, size):
    """.npy (NCHW float model space, or HWC uint8 BGR) or an image file -> (N,3,S,S) float32."""
    if path.endswith('.npy'):
        a = np.load(path)
        if a.dtype == np.uint8 and a.ndim == 3:
            return preprocess(a, size)
        if a.ndim == 3:
            a = a[None]
        if a.ndim != 4 or a.shape[1] != 3:
            raise ValueError('%s: expected NCHW with 3 channels, got %s' % (path, a.shape))
        return torch.from_numpy(a.astype(np.float32))
    return preprocess(read_bgr(path), size)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ----------------------------------------------------------------------------- benchmark

TORCH_DTYPES = {'fp32': torch.float32, 'fp16': torch.float16, 'bf16': torch.bfloat16}


def _flag(read):
    """A torch backend setting for the record, or None where this torch version has no such flag."""
    try:
        return bool(read())
    except Exception:
        return None


def bench(model, a, load_s):
    """Time the generator on a batch of a.batch faces; returns the JSON dict.

    CPU: wall time per forward. CUDA: the model and the input live on the device in a.dtype;
    each timed forward is bracketed by torch.cuda.synchronize() (wall time, launch overhead
    included) and by CUDA events (device time). Memory: torch.cuda.max_memory_allocated() over
    the whole process (weights + peak activations + the compile's buffers), and cudaMemGetInfo
    (torch.cuda.mem_get_info) after the CUDA context exists but before the model is uploaded,
    and after the runs (the difference includes the caching allocator's reserve and library
    workspaces, not the context). With --compile the first warm-up call compiles (compile_s)."""
    size = model.size
    dtype = TORCH_DTYPES[a.dtype]
    cuda = a.device == 'cuda'
    info = {'model': 'gpen', 'size': size, 'cm': model.cm, 'narrow': model.narrow,
            'params': param_count(model), 'batch': a.batch, 'upsample_impl': UPSAMPLE_IMPL,
            'threads': torch.get_num_threads(), 'runs': a.runs, 'warmup': a.warmup,
            'load_s': round(load_s, 4), 'device': a.device, 'dtype': a.dtype,
            'compile': bool(a.compile), 'torch': torch.__version__}
    if cuda and not torch.cuda.is_available():
        return dict(info, error='torch %s has no usable CUDA device (torch.cuda.is_available() is False)'
                    % torch.__version__)
    if not cuda and a.dtype != 'fp32':
        return dict(info, error='--dtype %s needs --device cuda (the CPU reference runs fp32)' % a.dtype)
    if a.input:
        x = load_input(a.input, size)[:1].repeat(a.batch, 1, 1, 1)
    else:
        x = torch.rand(a.batch, 3, size, size, generator=torch.Generator().manual_seed(0)) * 2 - 1
    dev = torch.device(a.device)
    if cuda:
        torch.backends.cudnn.benchmark = True   # fixed shapes: let cuDNN pick its fastest kernels
        torch.zeros(1, device=dev)               # create the context before the first reading
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        free_before, total = torch.cuda.mem_get_info()
        info.update(device_name=torch.cuda.get_device_name(dev), cudnn_benchmark=True,
                    cudnn_allow_tf32=_flag(lambda: torch.backends.cudnn.allow_tf32),
                    matmul_allow_tf32=_flag(lambda: torch.backends.cuda.matmul.allow_tf32),
                    device_free_before_bytes=int(free_before), device_total_bytes=int(total))
    model = model.to(device=dev, dtype=dtype)
    x = x.to(device=dev, dtype=dtype)
    info['weights_bytes'] = int(sum(t.numel() * t.element_size() for t in
                                    list(model.parameters()) + list(model.buffers())))
    run = model
    if a.compile:
        run = torch.compile(model)
    warmup = max(a.warmup, 1) if a.compile else a.warmup
    times, dev_times = [], []
    y = None
    with torch.no_grad():
        for i in range(warmup + a.runs):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                t = time.perf_counter()
                start.record()
                y = run(x)
                end.record()
                torch.cuda.synchronize()
                wall = time.perf_counter() - t
            else:
                t = time.perf_counter()
                y = run(x)
                wall = time.perf_counter() - t
            if i == 0 and a.compile:
                info['compile_s'] = round(wall, 3)
            if i >= warmup:
                times.append(wall)
                if cuda:
                    dev_times.append(start.elapsed_time(end) / 1e3)
    med = float(np.median(times))
    info.update(median_s_per_forward=med, median_ms_per_face=1e3 * med / a.batch,
                min_ms_per_face=1e3 * min(times) / a.batch, peak_rss_mb=round(peak_rss_mb(), 1),
                output_finite=bool(torch.isfinite(y).all()))
    if cuda:
        free_after, _ = torch.cuda.mem_get_info()
        dmed = float(np.median(dev_times))
        info.update(device_median_ms=1e3 * dmed, device_ms_per_face=1e3 * dmed / a.batch,
                    peak_device_bytes=int(torch.cuda.max_memory_allocated()),
                    peak_device_reserved_bytes=int(torch.cuda.max_memory_reserved()),
                    device_free_after_bytes=int(free_after),
                    device_used_bytes=int(max(free_before - free_after, 0)))
    return info


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', help='GPEN .pth (official or random); omit for random weights')
    ap.add_argument('--input', help='face crop image, HWC uint8 BGR .npy, or NCHW float .npy')
    ap.add_argument('--out', help='output PNG (uint8 BGR); with N>1 an index is appended')
    ap.add_argument('--save-raw', help='save the model-space output (NCHW float32) as .npy')
    ap.add_argument('--size', type=int, default=None)
    ap.add_argument('--cm', type=float, default=None)
    ap.add_argument('--narrow', type=float, default=None)
    ap.add_argument('--style-dim', type=int, default=512)
    ap.add_argument('--seed', type=int, default=0, help='seed of the random weights')
    ap.add_argument('--threads', type=int, default=0, help='torch threads (0: torch default)')
    ap.add_argument('--bench', action='store_true', help='time the generator; prints JSON')
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--warmup', type=int, default=2)
    ap.add_argument('--batch', type=int, default=1, help='faces per forward in --bench')
    ap.add_argument('--device', choices=('cpu', 'cuda'), default='cpu',
                    help='--bench: where the model runs (cuda: timed with torch.cuda.synchronize and events)')
    ap.add_argument('--dtype', choices=('fp32', 'fp16', 'bf16'), default='fp32',
                    help='--bench: weights and activations (16-bit types need --device cuda)')
    ap.add_argument('--compile', action='store_true',
                    help='--bench: time torch.compile(model) (compile time reported separately)')
    ap.add_argument('--upsample-impl', choices=('convT', 'conv'), default='convT',
                    help="'conv' replaces the official transposed conv by an equivalent direct conv "
                         "(torch's CPU conv_transpose2d is slow without an optimised BLAS)")
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args(argv)

    if a.self_test or not (argv if argv is not None else sys.argv[1:]):
        self_test()
        return 0
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    global UPSAMPLE_IMPL
    UPSAMPLE_IMPL = a.upsample_impl
    if a.bench and a.device == 'cuda' and not torch.cuda.is_available():
        # before building the model: a machine without a GPU answers at once
        print(json.dumps({'error': 'torch %s has no usable CUDA device (torch.cuda.is_available() is False)'
                          % torch.__version__, 'device': a.device, 'dtype': a.dtype, 'compile': a.compile}))
        return 2
    t0 = time.perf_counter()
    if a.checkpoint:
        model = load(a.checkpoint, a.size, a.cm, a.narrow)
    else:
        size = a.size or 256
        cm = a.cm if a.cm is not None else 1
        cm = int(cm) if float(cm).is_integer() else cm
        narrow = a.narrow if a.narrow is not None else 0.5
        model = random_model(size, cm, narrow, a.seed, a.style_dim)
    load_s = time.perf_counter() - t0
    size = model.size

    if a.bench:
        try:
            result = bench(model, a, load_s)
        except Exception as e:  # one variant failing (e.g. torch.compile) must not hide the others
            msg = str(e).strip().splitlines()[0][:500] if str(e).strip() else ''
            print(json.dumps({'error': '%s: %s' % (type(e).__name__, msg),
                              'device': a.device, 'dtype': a.dtype, 'compile': a.compile}))
            return 1
        print(json.dumps(result))
        return 0 if 'error' not in result else 2

    if not a.input:
        ap.error('--input is required (or use --bench / --self-test)')
    x = load_input(a.input, size)
    if x.shape[2:] != (size, size):
        raise ValueError('%s: input is %dx%d, model needs %dx%d' % (a.input, x.shape[3], x.shape[2], size, size))
    with torch.no_grad():
        y = model(x)
    if a.save_raw:
        np.save(a.save_raw, y.numpy().astype(np.float32))
    if a.out:
        import cv2
        for i in range(y.shape[0]):
            p = a.out if y.shape[0] == 1 else '%s_%d%s' % (os.path.splitext(a.out)[0], i, os.path.splitext(a.out)[1])
            cv2.imwrite(p, postprocess(y[i:i + 1]))
    yn = y.numpy()
    print(json.dumps({'shape': list(yn.shape), 'mean': float(yn.mean()), 'std': float(yn.std()),
                      'min': float(yn.min()), 'max': float(yn.max()),
                      'clipped_fraction': float(((yn < -1) | (yn > 1)).mean())}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
