#!/usr/bin/python3
"""Reference fixtures for the transformer ops of CodeFormer and RestoreFormer++
(tests/test_cpu_transformer_ops.cpp), computed with PyTorch and CodeFormer's official modules.

GroupNorm, LayerNorm, GELU and SiLU come from torch.nn / torch.nn.functional; the attention from
nn.MultiheadAttention called as CodeFormer's TransformerSALayer calls it (queries and keys with the
position embedding added, values without) and as a cross-attention (queries from another sequence); the code lookup as CodeFormer's forward (softmax of the
logits, top-1) and VQGAN's VectorQuantizer (argmin of the expanded squared distance); the sine
position embedding and the fuse block from the official PositionEmbeddingSine and Fuse_sft_block.
Activations are saved NHWC ([N, L, E] for sequences, batch first), weights as PyTorch holds them
except conv weights (HWIO), in tests/fixtures/transformer/.

The official code is not part of this repository: install it out of tree and point at it,
    /usr/bin/python3 -m pip install --no-deps --target /tmp/codeformer-pip codeformer-pip
    CODEFORMER_PIP=/tmp/codeformer-pip /usr/bin/python3 tests/reference/make_transformer_fixtures.py
Seeds are fixed, so the output is reproducible (up to torch's own CPU kernels).
"""
import importlib.util
import os
import shutil
import sys
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "transformer")


def load_official():
    """codeformer_arch.py and vqgan_arch.py without the package's training-side imports
    (torchvision, tqdm, the registry's logger): only the modules are needed."""
    base = os.path.join(os.environ.get("CODEFORMER_PIP", "/tmp/codeformer-pip"), "codeformer", "basicsr", "archs")
    if not os.path.isdir(base):
        sys.exit(f"CodeFormer's official code not found under {base}: see this script's docstring")

    class Registry:
        def register(self):
            return lambda cls: cls

    stubs = {
        "codeformer": {}, "codeformer.basicsr": {}, "codeformer.basicsr.archs": {},
        "codeformer.basicsr.utils": {"get_root_logger": lambda: None},
        "codeformer.basicsr.utils.registry": {"ARCH_REGISTRY": Registry()},
    }
    for name, attrs in stubs.items():
        m = types.ModuleType(name)
        m.__path__ = []
        m.__dict__.update(attrs)
        sys.modules[name] = m
    mods = {}
    for arch in ("vqgan_arch", "codeformer_arch"):
        name = "codeformer.basicsr.archs." + arch
        spec = importlib.util.spec_from_file_location(name, os.path.join(base, arch + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        mods[arch] = mod
    return mods["codeformer_arch"]


def save(name, t, dtype=np.float32):
    arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    np.save(os.path.join(OUT, name + ".npy"), np.ascontiguousarray(arr.astype(dtype)))


def nhwc(t):
    return t.permute(0, 2, 3, 1).contiguous()


def hwio(w):
    return w.permute(2, 3, 1, 0).contiguous()


def main():
    official = load_official()
    torch.manual_seed(2024)
    torch.set_num_threads(1)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)

    with torch.no_grad():
        # GroupNorm: VQGAN's normalize() (32 groups, eps 1e-6, affine) on a small scale, with and
        # without the swish that always follows it; and a plain one (no affine, eps 1e-5).
        x = torch.randn(2, 8, 3, 5) * 2 + 0.5
        gn = nn.GroupNorm(4, 8, eps=1e-6, affine=True)
        gn.weight.normal_()
        gn.bias.normal_()
        save("gn_x", nhwc(x))
        save("gn_gamma", gn.weight)
        save("gn_beta", gn.bias)
        save("gn_y", nhwc(gn(x)))
        save("gn_silu_y", nhwc(official.swish(gn(x))))
        save("gn_plain_y", nhwc(F.group_norm(x, 2, eps=1e-5)))

        # LayerNorm over the last axis.
        x = torch.randn(2, 7, 12) * 3 - 1
        ln = nn.LayerNorm(12)
        ln.weight.normal_()
        ln.bias.normal_()
        save("ln_x", x)
        save("ln_gamma", ln.weight)
        save("ln_beta", ln.bias)
        save("ln_y", ln(x))
        save("ln_plain_y", F.layer_norm(x, (12,), eps=1e-6))

        # GELU (erf form) and SiLU over a range that reaches both saturations.
        x = torch.linspace(-12, 12, 301).reshape(1, 301) + torch.randn(1, 301) * 0.01
        save("act_x", x)
        save("gelu_y", nn.GELU()(x))
        save("silu_y", F.silu(x))

        # Attention as TransformerSALayer runs it: q = k = x + pos, value = x; [L, N, E] there.
        for name, (n, l, e, heads, with_pos) in {"attn": (2, 10, 16, 4, True), "attn_nopos": (1, 37, 24, 3, False)}.items():
            mha = nn.MultiheadAttention(e, heads)
            mha.in_proj_bias.normal_(std=0.1)
            mha.out_proj.bias.normal_(std=0.1)
            x = torch.randn(n, l, e)
            pos = torch.randn(1, l, e) if with_pos else torch.zeros(1, l, e)
            q = (x + pos).transpose(0, 1)
            y = mha(q, q, value=x.transpose(0, 1), need_weights=False)[0].transpose(0, 1)
            save(name + "_x", x)
            if with_pos:
                save(name + "_pos", pos)
            save(name + "_in_w", mha.in_proj_weight)
            save(name + "_in_b", mha.in_proj_bias)
            save(name + "_out_w", mha.out_proj.weight)
            save(name + "_out_b", mha.out_proj.bias)
            save(name + "_y", y)

        # Code lookup. argmax: CodeFormer's softmax -> topk(1) -> codebook rows; one row with its
        # maximum twice (the first wins, as torch.argmax).
        k, c = 20, 6
        codebook = torch.randn(k, c)
        logits = torch.randn(2, 3, 4, k) * 3
        logits[0, 1, 2, 15] = logits[0, 1, 2, 4] = logits[0, 1, 2].max() + 1
        idx = torch.argmax(F.softmax(logits, dim=3), dim=3)
        _, top = torch.topk(F.softmax(logits, dim=3), 1, dim=3)
        untied = torch.ones_like(idx, dtype=torch.bool)
        untied[0, 1, 2] = False
        assert torch.equal(top[..., 0][untied], idx[untied])
        save("code_codebook", codebook)
        save("code_logits", logits)
        save("code_argmax_idx", idx, np.int32)
        save("code_argmax_y", codebook[idx])
        # argmin: VectorQuantizer's distance on features; a duplicated codebook row ties.
        vq_book = torch.randn(k, c)
        vq_book[13] = vq_book[5]
        z = torch.randn(2, 3, 4, c)
        z[1, 0, 0] = vq_book[5] + 1e-3
        zf = z.reshape(-1, c)
        d = (zf**2).sum(dim=1, keepdim=True) + (vq_book**2).sum(1) - 2 * torch.matmul(zf, vq_book.t())
        idx = torch.argmin(d, dim=1).reshape(2, 3, 4)
        assert idx[1, 0, 0] == 5
        save("vq_codebook", vq_book)
        save("vq_z", z)
        save("vq_argmin_idx", idx, np.int32)
        save("vq_argmin_y", vq_book[idx])

        # Sine position embedding, both forms of the official module.
        feat = torch.zeros(1, 3, 4, 5)
        save("pos_sine", nhwc(official.PositionEmbeddingSine(8)(feat))[0])
        save("pos_sine_norm", nhwc(official.PositionEmbeddingSine(8, normalize=True)(feat))[0])

        # Fuse_sft_block: the output affine alone, and the whole block (in_ch 32: GroupNorm's 32
        # groups over the 64 concatenated channels).
        dec = torch.randn(2, 3, 4, 5)
        scale = torch.randn(2, 3, 4, 5)
        shift = torch.randn(2, 3, 4, 5)
        save("fuse_dec", dec)
        save("fuse_scale", scale)
        save("fuse_shift", shift)
        save("fuse_y", dec + 0.7 * (dec * scale + shift))
        block = official.Fuse_sft_block(32, 32)
        for p in block.parameters():
            p.normal_(std=0.1)
        enc = torch.randn(1, 32, 6, 5)
        dec = torch.randn(1, 32, 6, 5)
        save("block_enc", nhwc(enc))
        save("block_dec", nhwc(dec))
        for pname, p in block.state_dict().items():
            save("block." + pname, hwio(p) if p.dim() == 4 else p)
        save("block_y", nhwc(block(enc, dec, 0.5)))

        # Cross-attention (RestoreFormer++'s MultiHeadAttnBlock given an encoder feature): queries
        # from another sequence, keys and values from x; here with a position embedding on the
        # queries and keys too, the form the op takes. Drawn last, so the fixtures above keep
        # their numbers.
        n, l, e, heads = 2, 10, 16, 4
        mha = nn.MultiheadAttention(e, heads)
        mha.in_proj_bias.normal_(std=0.1)
        mha.out_proj.bias.normal_(std=0.1)
        x = torch.randn(n, l, e)
        query = torch.randn(n, l, e)
        pos = torch.randn(1, l, e)
        y = mha((query + pos).transpose(0, 1), (x + pos).transpose(0, 1), value=x.transpose(0, 1),
                need_weights=False)[0].transpose(0, 1)
        y_nopos = mha(query.transpose(0, 1), x.transpose(0, 1), value=x.transpose(0, 1),
                      need_weights=False)[0].transpose(0, 1)
        for pname, t in (("x", x), ("query", query), ("pos", pos), ("in_w", mha.in_proj_weight),
                         ("in_b", mha.in_proj_bias), ("out_w", mha.out_proj.weight), ("out_b", mha.out_proj.bias),
                         ("y", y), ("nopos_y", y_nopos)):
            save("xattn_" + pname, t)


if __name__ == "__main__":
    main()
