#!/usr/bin/python3
"""Fixtures for the CPU GPEN ops (tests/test_cpu_modconv.cpp): pixel_norm, demod, modconv
(plain, upsampling, ToRGB) and the blur epilogue.

The expected outputs come from the literal official formulation of
../shared/reference/gpen-semantics.md, NOT the engine's decomposed one:
  ModulatedConv2d: W'[n,o,i] = W[o,i] * s[n,i] / sqrt(in k k), demodulated per (n, o) by
  rsqrt(sum W'^2 + 1e-8), grouped conv2d (padding k//2) or conv_transpose2d (stride 2,
  padding 0) followed by the 4x4 blur upfirdn(k4 * 4, pad (1, 1)); then StyledConv's
  concat with nw * noise and the fused leaky relu (sqrt 2 * lrelu_0.2(. + bias)).
The engine consumes the same numbers in its own layouts: NHWC activations, HWIO weights
with the 1/sqrt(in k k) equalized-lr scale folded in, the Q table, and the input of a conv
as the virtual concat (x, act2(x2 * nw + b2)) of the previous layer's halves.

Inputs are drawn in float32 and the references computed in float64 from those float32
values, so the stored expectations carry only their final rounding (0.5 ulp).

Run from anywhere: /usr/bin/python3 tests/reference/make_gpen_op_fixtures.py
Writes tests/fixtures/gpen_ops/*.npy (deterministic, seed 1234).
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'gpen_ops'))
SQRT2 = math.sqrt(2.0)

gen = torch.Generator().manual_seed(1234)


def randn(*shape, scale=1.0):
    return (torch.randn(*shape, generator=gen) * scale).float().double()


def rand(*shape, lo=0.0, hi=1.0):
    return (torch.rand(*shape, generator=gen) * (hi - lo) + lo).float().double()


def save(name, t):
    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, name + '.npy'), np.ascontiguousarray(t.detach().cpu().numpy().astype(np.float32)))


def nchw_to_nhwc(t):
    return t.permute(0, 2, 3, 1)


def flrelu(x, bias):
    return F.leaky_relu(x + bias.reshape(1, -1, 1, 1), 0.2) * SQRT2


def fir4():
    a = torch.tensor([1.0, 3.0, 3.0, 1.0], dtype=torch.float64)
    k = a[None, :] * a[:, None]
    return k / k.sum()


def upfirdn(x, kernel, up, pad0, pad1):
    n, c, h, w = x.shape
    if up > 1:
        z = x.new_zeros(n, c, h, up, w, up)
        z[:, :, :, 0, :, 0] = x
        x = z.reshape(n, c, h * up, w * up)
    x = F.pad(x, [pad0, pad1, pad0, pad1])
    kh, kw = kernel.shape
    wk = torch.flip(kernel, [0, 1]).reshape(1, 1, kh, kw).to(x.dtype)
    x = F.conv2d(x.reshape(n * c, 1, x.shape[2], x.shape[3]), wk)
    return x.reshape(n, c, x.shape[2], x.shape[3])


def modulated_conv(x, weight, s, demodulate, upsample):
    """Official ModulatedConv2d.forward with the style s = modulation(w) given directly.
    weight (1, out, in, k, k) unscaled; x NCHW."""
    n, cin, h, w = x.shape
    _, cout, _, k, _ = weight.shape
    scale = 1.0 / math.sqrt(cin * k * k)
    wmod = scale * weight * s.reshape(n, 1, cin, 1, 1)
    if demodulate:
        d = torch.rsqrt(wmod.pow(2).sum([2, 3, 4]) + 1e-8)
        wmod = wmod * d.reshape(n, cout, 1, 1, 1)
    wmod = wmod.reshape(n * cout, cin, k, k)
    xg = x.reshape(1, n * cin, h, w)
    if upsample:
        wt = wmod.reshape(n, cout, cin, k, k).transpose(1, 2).reshape(n * cin, cout, k, k)
        out = F.conv_transpose2d(xg, wt, padding=0, stride=2, groups=n)
        out = out.reshape(n, cout, out.shape[2], out.shape[3])
        out = upfirdn(out, fir4() * 4.0, 1, 1, 1)
    else:
        out = F.conv2d(xg, wmod, padding=k // 2, groups=n)
        out = out.reshape(n, cout, out.shape[2], out.shape[3])
    return out


def engine_weight(weight):
    """(1, out, in, k, k) -> HWIO with the equalized-lr scale folded in."""
    _, cout, cin, k, _ = weight.shape
    ws = weight[0] / math.sqrt(cin * k * k)
    return ws.permute(2, 3, 1, 0).contiguous()


def q_table(weight):
    ws = engine_weight(weight)  # [k][k][in][out]
    return ws.pow(2).sum([0, 1]).t().contiguous()  # [out][in]


def layer_case(name, n, xn, h, w, c1, c2, cout, k, upsample, demodulate, to_rgb=False):
    """One layer whose input is the concat of x (c1 channels, batch xn) and the activated
    noise half act(nw * noise + b2) (c2 channels), as in GPEN's decoder."""
    x = randn(xn, c1, h, w)
    parts = [x.expand(n, c1, h, w)]
    if c2:
        noise = randn(n, c2, h, w)
        nw = rand(1, lo=0.3, hi=1.2)
        b2 = randn(c2, scale=0.3)
        parts.append(flrelu(nw * noise, b2))
    xin = torch.cat(parts, 1)
    cin = c1 + c2
    weight = randn(1, cout, cin, k, k)
    s = randn(n, cin, scale=0.5) + 1.0  # modulation bias is initialised to 1
    out = modulated_conv(xin, weight, s, demodulate, upsample)
    save(name + '.x', nchw_to_nhwc(x))
    if c2:
        save(name + '.x2', nchw_to_nhwc(noise))
        save(name + '.x2_scale', nw)
        save(name + '.x2_bias', b2)
    save(name + '.w', engine_weight(weight))
    save(name + '.s', s)
    if demodulate:
        save(name + '.q', q_table(weight))
    if to_rgb:
        bias = randn(cout, scale=0.3)
        skip = randn(n, cout, h // 2, w // 2)
        residual = upfirdn(skip, fir4() * 4.0, 2, 2, 1)
        y = out + bias.reshape(1, -1, 1, 1) + residual
        save(name + '.bias', bias)
        save(name + '.residual', nchw_to_nhwc(residual))
    else:
        # StyledConv: concat([out, nw' * noise']) then flrelu over 2*cout channels; the engine's
        # modconv (or blur epilogue) produces the first half, the next layer reads the second
        # half as its x2. Only the first half depends on this layer's conv.
        act_bias = randn(2 * cout, scale=0.3)
        y = flrelu(out, act_bias[:cout])
        save(name + '.bias', act_bias[:cout])
    save(name + '.y', nchw_to_nhwc(y))


def main():
    # pixel_norm on two latent vectors of 512 (one with a large scale).
    z = torch.cat([randn(1, 512), randn(1, 512, scale=40.0)], 0)
    save('pixel_norm.x', z)
    save('pixel_norm.y', z * torch.rsqrt(z.pow(2).mean(1, keepdim=True) + 1e-8))

    # demod: d from the literal modulated weight vs the engine's Q table.
    weight = randn(1, 40, 48, 3, 3)
    s = randn(3, 48, scale=0.5) + 1.0
    wmod = weight * s.reshape(3, 1, 48, 1, 1) / math.sqrt(48 * 9)
    save('demod.s', s)
    save('demod.q', q_table(weight))
    save('demod.d', torch.rsqrt(wmod.pow(2).sum([2, 3, 4]) + 1e-8))

    # Plain StyledConv: x (already activated first half) + noise half, demod, bias, act.
    layer_case('styled', n=2, xn=2, h=9, w=7, c1=12, c2=12, cout=20, k=3, upsample=False, demodulate=True)
    # GPEN's conv1: the constant input (batch 1) broadcast over two styles, no noise half.
    layer_case('const', n=2, xn=1, h=4, w=4, c1=32, c2=0, cout=24, k=3, upsample=False, demodulate=True)
    # Upsampling StyledConv: transposed conv -> blur -> demod, bias, act.
    layer_case('styled_up', n=2, xn=2, h=5, w=6, c1=10, c2=10, cout=18, k=3, upsample=True, demodulate=True)
    # ToRGB: 1x1, no demod, bias, upsampled skip as the residual.
    layer_case('to_rgb', n=2, xn=2, h=8, w=10, c1=16, c2=16, cout=3, k=1, upsample=False, demodulate=False,
               to_rgb=True)


if __name__ == '__main__':
    main()
