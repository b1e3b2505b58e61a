#!/usr/bin/python3
"""Writes tests/fixtures/restoreformer/ with the official RestoreFormer++ network
(VQVAEGANMultiHeadTransformer of RestoreFormer/modules/vqvae/vqvae_arch.py in
wzhouxiff/RestoreFormerPlusPlus).

The weights are the function of the tensor's name and the element's index that
tests/reference/make_codeformer_fixtures.py documents (its docstring has the rule; the C++ side is
tests/codeformer_fixture.h), here with seed 4049 and the names of the network's state dict (the
released checkpoint holds them under 'state_dict' with the prefix "vqvae."; the C++ test writes
them so). A whole checkpoint is ~290 MB, so it is rebuilt by the test rather than stored.

The configurations are the released RestoreFormer++ (head_size 4, ex_multi_scale_num 1) and
RestoreFormer (head_size 8, ex_multi_scale_num 0), n_embed 1024, embed_dim 256, z_channels 256,
ch_mult 1 2 2 4 4 8, with ch 32 instead of 64 (a quarter of the weights and of the work); every
other dimension is the released one. Per variant, <v> "rfpp" or "rf":

  indices_<v>.npy  (2, 256) int32: the code the official quantizer picks per position
  output_<v>.npy   (2, 128, 128, 3) float32: the raw output, NHWC, at rows 1::4 and columns 2::4
  layout_official.json  every state-dict tensor (name, shape, in state-dict order) of the released
                   RestoreFormer++ and RestoreFormer (as RestoreFormer.py builds them) and their
                   parameter counts
  manifest.json    the seed and per variant the configuration, the largest |output| over the whole
                   image, how far a float64 run moves the output (float rounding alone) and the
                   smallest gap between the nearest and second-nearest code's squared distance (how
                   far from a tie the codes are)

The input is tests/fixtures/codeformer/input.npy (two degraded aligned faces of ../shared/images,
512 x 512), x = (rgb / 255 - 0.5) / 0.5 in float32, NCHW, as RestoreFormer.py normalises; the net
is called as there, net(x)[0], its indices from the quantizer's info.

The official code is not part of this repository: check it out and point at it,
    git clone https://github.com/wzhouxiff/RestoreFormerPlusPlus /tmp/RestoreFormerPlusPlus
    RESTOREFORMER_REPO=/tmp/RestoreFormerPlusPlus /usr/bin/python3 tests/reference/make_restoreformer_fixtures.py
"""
import importlib.util
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_codeformer_fixtures import weights as codeformer_rule  # noqa: E402

OUT = os.path.normpath(os.path.join(HERE, "..", "fixtures", "restoreformer"))
INPUT = os.path.normpath(os.path.join(HERE, "..", "fixtures", "codeformer", "input.npy"))
SEED = 4049
VARIANTS = {"rfpp": dict(ch=32, head_size=4, ex_multi_scale_num=1), "rf": dict(ch=32, head_size=8, ex_multi_scale_num=0)}


def load_official():
    path = os.path.join(os.environ.get("RESTOREFORMER_REPO", "/tmp/RestoreFormerPlusPlus"),
                        "RestoreFormer", "modules", "vqvae", "vqvae_arch.py")
    if not os.path.isfile(path):
        sys.exit(f"RestoreFormer++'s official code not found at {path}: see this script's docstring")
    spec = importlib.util.spec_from_file_location("vqvae_arch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def weights(model):
    """The weight rule of make_codeformer_fixtures.py (name and index hashed), at this seed."""
    codeformer_rule(model, SEED)


def write_layout(official):
    doc = dict(checkpoint_key="state_dict", key_prefix="vqvae.")
    for name, args in (("RestoreFormer++", dict(head_size=4, ex_multi_scale_num=1)),
                       ("RestoreFormer", dict(head_size=8, ex_multi_scale_num=0))):
        sd = official.VQVAEGANMultiHeadTransformer(**args).state_dict()
        doc[name] = dict(args=args, parameters=int(sum(v.numel() for v in sd.values())),
                         tensors=[[k, list(v.shape)] for k, v in sd.items()])
    with open(os.path.join(OUT, "layout_official.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def run(official, config, x):
    """The official network of `config` with the rule's weights on x, and in float64; writes its
    indices and sampled output, returns its manifest entry."""
    net = official.VQVAEGANMultiHeadTransformer(**config).eval()
    weights(net)
    net64 = official.VQVAEGANMultiHeadTransformer(**config).eval()
    net64.load_state_dict(net.state_dict())
    net64 = net64.double()
    with torch.no_grad():
        out, _, info, _ = net(x)
        idx = info[2].reshape(x.shape[0], -1).to(torch.int32)
        out64, _, info64, _ = net64(x.double())
        assert torch.equal(idx, info64[2].reshape(x.shape[0], -1).to(torch.int32)), "float64 picks other codes"
        d2 = info64[3].topk(2, dim=1, largest=False).values
    return idx, out.permute(0, 2, 3, 1).contiguous().numpy(), dict(
        config=config, max_abs=float(out.abs().max()), f64_maxabs_diff=float((out.double() - out64).abs().max()),
        min_distance_gap=float((d2[:, 1] - d2[:, 0]).min()), distinct_codes=int(torch.unique(idx).numel()))


def main():
    torch.set_num_threads(2)
    official = load_official()
    os.makedirs(OUT, exist_ok=True)
    write_layout(official)
    rgb = np.load(INPUT)
    x = (rgb.astype(np.float32) / np.float32(255.0) - np.float32(0.5)) / np.float32(0.5)
    x = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    manifest = dict(seed=SEED, input="../codeformer/input.npy", sample="rows 1::4, columns 2::4", variants={})
    for v, config in VARIANTS.items():
        idx, nhwc, entry = run(official, config, x)
        np.save(os.path.join(OUT, f"indices_{v}.npy"), idx.numpy())
        np.save(os.path.join(OUT, f"output_{v}.npy"), np.ascontiguousarray(nhwc[:, 1::4, 2::4, :]))
        manifest["variants"][v] = entry
        print(v, entry, flush=True)
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
