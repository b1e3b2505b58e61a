#!/usr/bin/python3
"""Reference fixtures for the CPU kernels (tests/test_cpu_ops.cpp) and the .npy reader
(tests/test_npy.cpp), computed with PyTorch.

Every op is computed in NCHW exactly as PyTorch defines it (F.conv2d, F.linear, F.interpolate
'nearest', F.softmax) or, for upfirdn2d, by a direct transcription of the StyleGAN2 definition
(zero insertion, pad/crop, true convolution, decimation) built from torch ops. Inputs, weights and
outputs are then saved in the engine's layouts (activations NHWC, conv weights HWIO) as .npy
files in tests/fixtures/ops/, and manifest.json lists each case with its op attributes.

Run from anywhere with the interpreter that has torch:
    /usr/bin/python3 tests/reference/make_op_fixtures.py
Seeds are fixed, so the output is reproducible (up to torch's own CPU kernels).
"""
import json
import math
import os
import shutil

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "ops")

torch.manual_seed(1234)
torch.set_num_threads(1)

# The script is the single source of these files: start from an empty directory.
if os.path.isdir(OUT):
    shutil.rmtree(OUT)
os.makedirs(OUT)

CASES = []


def save(name, t):
    arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    arr = np.ascontiguousarray(arr.astype(np.float32))
    fname = name + ".npy"
    np.save(os.path.join(OUT, fname), arr)
    return fname


def nhwc(t):
    return t.permute(0, 2, 3, 1).contiguous()


def act_dict(kind, slope=None):
    if kind == "none":
        return {"slope": 1.0, "gain": 1.0}
    if kind == "relu":
        return {"slope": 0.0, "gain": 1.0}
    if kind == "leaky":
        return {"slope": slope, "gain": 1.0}
    if kind == "scaled_leaky":
        # The engine stores float(sqrt(2)); use the same float32 gain here.
        return {"slope": 0.2, "gain": float(np.float32(math.sqrt(2.0)))}
    raise ValueError(kind)


def apply_act(t, a):
    # y = gain * (x >= 0 ? x : slope * x), computed as PyTorch's leaky_relu times the gain.
    if a["slope"] == 1.0 and a["gain"] == 1.0:
        return t
    y = F.leaky_relu(t, negative_slope=a["slope"]) if a["slope"] != 0.0 else F.relu(t)
    return y * a["gain"] if a["gain"] != 1.0 else y


# ---------------------------------------------------------------- conv2d
def conv_case(name, n, h, w, cin, cout, kh, kw, stride=(1, 1), pads=(0, 0, 0, 0), groups=1, bias=True,
              act="none", slope=None, residual=False, scale=1.0):
    """pads = (top, left, bottom, right)."""
    x = torch.randn(n, cin, h, w)
    wt = torch.randn(cout, cin // groups, kh, kw) * scale / math.sqrt(cin // groups * kh * kw)
    b = torch.randn(cout) if bias else None
    a = act_dict(act, slope)
    top, left, bottom, right = pads
    xp = F.pad(x, (left, right, top, bottom))  # asymmetric zero padding, then a valid conv
    y = F.conv2d(xp, wt, b, stride=stride, groups=groups)
    y = apply_act(y, a)
    r = None
    if residual:
        r = torch.randn_like(y)
        y = y + r
    files = {"x": save(name + "_x", nhwc(x)), "w": save(name + "_w", wt.permute(2, 3, 1, 0).contiguous())}
    if bias:
        files["bias"] = save(name + "_b", b)
    if residual:
        files["residual"] = save(name + "_r", nhwc(r))
    files["y"] = save(name + "_y", nhwc(y))
    CASES.append({
        "name": name, "op": "conv2d", "files": files,
        "params": {"kh": kh, "kw": kw, "stride_h": stride[0], "stride_w": stride[1], "pad_top": top,
                   "pad_left": left, "pad_bottom": bottom, "pad_right": right, "groups": groups,
                   "has_bias": bias, "has_residual": residual, "act": a},
    })


conv_case("conv1x1", 2, 5, 7, 8, 12, 1, 1)
conv_case("conv1x1_rgb_residual", 1, 6, 5, 16, 3, 1, 1, bias=False, residual=True)
conv_case("conv1x1_s2", 1, 7, 7, 8, 16, 1, 1, stride=(2, 2), act="relu")
conv_case("conv3x3_s1", 1, 9, 11, 16, 24, 3, 3, pads=(1, 1, 1, 1), act="scaled_leaky")
conv_case("conv3x3_s2", 1, 10, 9, 8, 16, 3, 3, stride=(2, 2), pads=(1, 1, 1, 1), bias=False, act="relu")
conv_case("conv3x3_s2_valid", 1, 9, 9, 8, 8, 3, 3, stride=(2, 2), act="scaled_leaky")
conv_case("conv3x3_s2_stem", 1, 12, 12, 3, 8, 3, 3, stride=(2, 2), pads=(1, 1, 1, 1), act="leaky", slope=0.1)
conv_case("conv4x4_asym", 1, 8, 8, 6, 10, 4, 4, pads=(2, 1, 1, 2), act="leaky", slope=0.1)
conv_case("conv3x5_s21", 1, 7, 9, 5, 7, 3, 5, stride=(2, 1), pads=(0, 2, 1, 1))
conv_case("conv3x3_groups2", 1, 6, 7, 8, 12, 3, 3, pads=(1, 1, 1, 1), groups=2, act="leaky", slope=0.1)
conv_case("conv3x3_residual", 1, 6, 6, 8, 8, 3, 3, pads=(1, 1, 1, 1), act="scaled_leaky", residual=True)
conv_case("conv3x3_deep", 1, 5, 5, 160, 8, 3, 3, pads=(1, 1, 1, 1))  # K = 1440: im2col in two passes
conv_case("dw3x3_s1", 1, 7, 8, 16, 16, 3, 3, pads=(1, 1, 1, 1), groups=16, act="leaky", slope=0.1)
conv_case("dw3x3_s2", 2, 9, 10, 8, 8, 3, 3, stride=(2, 2), pads=(1, 1, 1, 1), groups=8, bias=False, act="relu")
conv_case("dw5x5_asym", 1, 8, 6, 4, 4, 5, 5, pads=(2, 1, 2, 3), groups=4, residual=True)


# ---------------------------------------------------------------- dense
def dense_case(name, n, fin, fout, bias, w_scale, b_scale, act):
    x = torch.randn(n, fin)
    w = torch.randn(fout, fin)
    b = torch.randn(fout) if bias else None
    a = act_dict(act)
    y = F.linear(x, w * w_scale, b * b_scale if bias else None)
    y = apply_act(y, a)
    files = {"x": save(name + "_x", x), "w": save(name + "_w", w)}
    if bias:
        files["bias"] = save(name + "_b", b)
    files["y"] = save(name + "_y", y)
    CASES.append({"name": name, "op": "dense", "files": files,
                  "params": {"has_bias": bias, "w_scale": w_scale, "b_scale": b_scale, "act": a}})


dense_case("dense_equal_lr", 3, 40, 24, True, float(np.float32(1 / math.sqrt(40))), 0.01, "scaled_leaky")
dense_case("dense_plain", 1, 64, 10, False, 1.0, 1.0, "none")


# ---------------------------------------------------------------- bias_act, add
def bias_act_case(name, shape, bias, act, slope=None):
    x = torch.randn(*shape) * 2
    b = torch.randn(shape[-1]) if bias else None
    a = act_dict(act, slope)
    y = apply_act(x + b if bias else x, a)
    files = {"x": save(name + "_x", x)}
    if bias:
        files["bias"] = save(name + "_b", b)
    files["y"] = save(name + "_y", y)
    CASES.append({"name": name, "op": "bias_act", "files": files, "params": {"has_bias": bias, "act": a}})


bias_act_case("bias_act_flrelu", (2, 5, 6, 12), True, "scaled_leaky")
bias_act_case("bias_act_relu_nobias", (3, 17), False, "relu")


def add_case(name, shape, act, slope=None):
    a_ = torch.randn(*shape)
    b_ = torch.randn(*shape)
    a = act_dict(act, slope)
    y = apply_act(a_ + b_, a)
    CASES.append({"name": name, "op": "add",
                  "files": {"a": save(name + "_a", a_), "b": save(name + "_b", b_), "y": save(name + "_y", y)},
                  "params": {"act": a}})


add_case("add_plain", (2, 4, 5, 6), "none")
add_case("add_leaky", (1, 3, 7, 9), "leaky", 0.1)


# ---------------------------------------------------------------- resize_nearest
def resize_case(name, n, h, w, c, oh, ow):
    x = torch.randn(n, c, h, w)
    y = F.interpolate(x, size=(oh, ow), mode="nearest")
    # The engine defines the source index as floor(dst * in / out) in integers; make sure torch's
    # float computation agrees for the sizes used here.
    iy = [(o * h) // oh for o in range(oh)]
    ix = [(o * w) // ow for o in range(ow)]
    assert torch.equal(y, x[:, :, iy][:, :, :, ix]), name
    CASES.append({"name": name, "op": "resize_nearest",
                  "files": {"x": save(name + "_x", nhwc(x)), "y": save(name + "_y", nhwc(y))},
                  "params": {"out_h": oh, "out_w": ow}})


resize_case("resize_up_13_25", 1, 13, 7, 5, 25, 16)
resize_case("resize_down_25_13", 2, 25, 16, 3, 13, 7)
resize_case("resize_up_x2", 1, 10, 10, 4, 20, 20)
resize_case("resize_down_x2", 1, 20, 20, 4, 10, 10)
resize_case("resize_mixed", 1, 5, 6, 3, 9, 4)


# ---------------------------------------------------------------- upfirdn2d
def upfirdn2d_ref(x, k, up_x, up_y, down_x, down_y, px0, px1, py0, py1):
    """NCHW upfirdn2d following the StyleGAN2 reference definition."""
    n, c, h, w = x.shape
    kh, kw = k.shape
    u = x.new_zeros(n, c, h * up_y, w * up_x)
    u[:, :, ::up_y, ::up_x] = x  # up - 1 zeros after each sample
    u = F.pad(u, [max(px0, 0), max(px1, 0), max(py0, 0), max(py1, 0)])
    u = u[:, :, max(-py0, 0):u.shape[2] - max(-py1, 0), max(-px0, 0):u.shape[3] - max(-px1, 0)]
    # True convolution: cross-correlation with the flipped kernel, one channel at a time.
    wk = torch.flip(k, [0, 1]).view(1, 1, kh, kw).repeat(c, 1, 1, 1)
    y = F.conv2d(u, wk, groups=c)
    return y[:, :, ::down_y, ::down_x]


def upfirdn_case(name, n, h, w, c, k, up=(1, 1), down=(1, 1), pad_x=(0, 0), pad_y=(0, 0)):
    x = torch.randn(n, c, h, w)
    k = torch.as_tensor(k, dtype=torch.float32)
    y = upfirdn2d_ref(x, k, up[0], up[1], down[0], down[1], pad_x[0], pad_x[1], pad_y[0], pad_y[1])
    CASES.append({
        "name": name, "op": "upfirdn2d",
        "files": {"x": save(name + "_x", nhwc(x)), "y": save(name + "_y", nhwc(y))},
        "params": {"up_x": up[0], "up_y": up[1], "down_x": down[0], "down_y": down[1], "pad_x0": pad_x[0],
                   "pad_x1": pad_x[1], "pad_y0": pad_y[0], "pad_y1": pad_y[1], "kh": int(k.shape[0]),
                   "kw": int(k.shape[1]), "kernel": [float(v) for v in k.flatten().tolist()]},
    })


k1 = torch.tensor([1.0, 3.0, 3.0, 1.0])
K = torch.outer(k1, k1) / 64.0  # GPEN's blur kernel
upfirdn_case("upfirdn_blur_pad22", 1, 8, 8, 6, K, pad_x=(2, 2), pad_y=(2, 2))          # before a stride-2 conv
upfirdn_case("upfirdn_up2_pad21", 1, 6, 5, 3, 4 * K, up=(2, 2), pad_x=(2, 1), pad_y=(2, 1))  # ToRGB skip upsample
upfirdn_case("upfirdn_blur_pad11", 1, 9, 9, 8, 4 * K, pad_x=(1, 1), pad_y=(1, 1))      # after the transposed conv
upfirdn_case("upfirdn_down2", 1, 8, 8, 4, K, down=(2, 2), pad_x=(1, 1), pad_y=(1, 1))
upfirdn_case("upfirdn_nonsep_updown", 2, 7, 6, 3, torch.randn(3, 3), up=(2, 1), down=(1, 2), pad_x=(-1, 2),
             pad_y=(3, 0))
upfirdn_case("upfirdn_nonsep_5x2_crop", 1, 9, 7, 5, torch.randn(5, 2), pad_x=(1, 1), pad_y=(-2, 1))
upfirdn_case("upfirdn_sep_asym_up2", 1, 5, 6, 4, torch.outer(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, -1.0])),
             up=(2, 2), pad_x=(1, 0), pad_y=(0, 1))


# ---------------------------------------------------------------- softmax
def softmax_case(name, x):
    y = F.softmax(x, dim=-1)
    CASES.append({"name": name, "op": "softmax", "files": {"x": save(name + "_x", x), "y": save(name + "_y", y)},
                  "params": {}})


softmax_case("softmax_pairs", torch.randn(2, 7, 2) * 3)
softmax_case("softmax_large_logits", torch.randn(3, 50) * 30 + 100)


# ---------------------------------------------------------------- .npy reader fixtures
def npy_fixtures():
    """Small arrays of each supported dtype; values are f(i) of the flat index i (see test_npy.cpp)."""
    d = os.path.join(OUT, "npy")
    os.makedirs(d, exist_ok=True)
    i6 = np.arange(6).reshape(2, 3)
    np.save(os.path.join(d, "f4.npy"), (i6 * 0.5 - 1).astype("<f4"))
    np.save(os.path.join(d, "f2.npy"), (i6 * 0.25 - 0.5).astype("<f2"))
    np.save(os.path.join(d, "i4.npy"), (i6 * 1000 - 2500).astype("<i4"))
    np.save(os.path.join(d, "u1.npy"), (i6 * 50).astype("u1"))
    np.save(os.path.join(d, "i8.npy"), (i6 - 3).astype("<i8") * (1 << 40))
    np.save(os.path.join(d, "f4_3d.npy"), np.arange(24, dtype="<f4").reshape(2, 3, 4))
    np.save(os.path.join(d, "f4_scalar.npy"), np.array(7.5, dtype="<f4"))
    np.save(os.path.join(d, "f4_empty.npy"), np.zeros((0, 3), dtype="<f4"))
    with open(os.path.join(d, "f4_v2.npy"), "wb") as f:
        np.lib.format.write_array(f, (i6 * 0.5 - 1).astype("<f4"), version=(2, 0))
    # Files the reader must refuse with a clear message.
    np.save(os.path.join(d, "bad_bigendian.npy"), i6.astype(">f4"))
    np.save(os.path.join(d, "bad_fortran.npy"), np.asfortranarray(i6.astype("<f4")))
    np.save(os.path.join(d, "bad_f8.npy"), i6.astype("<f8"))


npy_fixtures()

with open(os.path.join(OUT, "manifest.json"), "w") as f:
    json.dump({"generator": "tests/reference/make_op_fixtures.py", "torch": torch.__version__, "cases": CASES}, f,
              indent=1)
    f.write("\n")

total = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(OUT) for fn in fns)
print(f"{len(CASES)} cases, {total / 1024:.0f} KiB in {OUT}")
