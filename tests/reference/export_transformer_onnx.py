#!/usr/bin/python3
"""Exports the official CodeFormer or RestoreFormer++ to ONNX for the ONNX Runtime / OpenVINO peers
of `gpen bench --arch codeformer|restoreformer`, as FaceFusion ships them: image in, image out
(opset 17), in the released configuration (CodeFormer() defaults as inference_codeformer.py builds
it; VQVAEGANMultiHeadTransformer(head_size=4, ex_multi_scale_num=1)). CodeFormer is called as
inference_codeformer.py calls it, net(x, w=w, adain=True)[0], with w fixed in the export at --w
(the file is named after it; FaceFusion feeds w as a second input instead).

The official code is loaded out of tree: CodeFormer from $CODEFORMER_PIP (codeformer-pip 0.0.4,
scripts/reference_packages.sh; as make_transformer_fixtures.py loads it), RestoreFormer++ from a
checkout of wzhouxiff/RestoreFormerPlusPlus at $RESTOREFORMER_REPO (as make_restoreformer_fixtures.py).

The weights are the engine's: --checkpoint, the one the .gpw was converted from (codeformer.pth:
'params_ema'; RestoreFormer++.ckpt: 'state_dict' under "vqvae."), or else the synthetic weights
`gpen bench` makes (--seed): the name-and-index rule of make_codeformer_fixtures.py, which
converter/synthetic_rule.cpp evaluates bit for bit. The input is uniform in [-1, 1) (seed 0).
Writes into --out-dir the .onnx, ..._input.npy (N, 3, 512, 512), ..._expect.npy (the official
PyTorch forward on that input) and ..._expect_indices.npy (N, 256) int32 (the codes it picked),
reusing them when present, and prints one JSON line with their paths.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_codeformer_fixtures import weights as rule_weights  # noqa: E402

SIZE = 512


class SizeKeyedModuleDict(torch.nn.ModuleDict):
    """CodeFormer looks its fuse blocks up by str(x.shape[-1]), which under the ONNX trace reads
    'tensor(32)' rather than '32': the same lookup, either spelling."""

    def __getitem__(self, key):
        return super().__getitem__(key[len('tensor('):-1] if key.startswith('tensor(') else key)


class CodeformerRestorer(torch.nn.Module):
    def __init__(self, net, w):
        super().__init__()
        self.net, self.w = net, w
        net.fuse_convs_dict.__class__ = SizeKeyedModuleDict

    def forward(self, x):
        return self.net(x, w=self.w, adain=True)[0]

    def codes(self, x):
        logits = self.net(x, w=self.w, adain=True)[1]
        # CodeFormer.forward's pick: the top-1 of the softmax of the logits.
        return torch.topk(torch.softmax(logits, dim=2), 1, dim=2)[1][..., 0]


class RestoreformerRestorer(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)[0]

    def codes(self, x):
        return self.net(x)[2][2].reshape(x.shape[0], -1)


def build(arch, checkpoint, seed, w):
    if arch == 'codeformer':
        from make_transformer_fixtures import load_official
        net = load_official().CodeFormer().eval()
        key, prefix = 'params_ema', ''
    else:
        from make_restoreformer_fixtures import load_official
        net = load_official().VQVAEGANMultiHeadTransformer(head_size=4, ex_multi_scale_num=1).eval()
        key, prefix = 'state_dict', 'vqvae.'
    if checkpoint:
        ck = torch.load(checkpoint, map_location='cpu')
        sd = ck.get(key, ck.get('params', ck))
        sd = {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}
        net.load_state_dict(sd)
    else:
        with torch.no_grad():
            rule_weights(net, seed)
    return CodeformerRestorer(net, w).eval() if arch == 'codeformer' else RestoreformerRestorer(net).eval()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--arch', choices=('codeformer', 'restoreformer'), required=True)
    ap.add_argument('--checkpoint', help='the official checkpoint; else synthetic weights')
    ap.add_argument('--seed', type=int, default=1, help='seed of the synthetic weights (as gpen bench)')
    ap.add_argument('--w', type=float, default=0.5, help='codeformer: the fidelity fixed in the export')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--opset', type=int, default=17)
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--out-dir', required=True)
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    if a.checkpoint:
        st = os.stat(a.checkpoint)
        weights = '%s_%d_%d' % (os.path.splitext(os.path.basename(a.checkpoint))[0], st.st_size, int(st.st_mtime))
    else:
        weights = 'seed%d' % a.seed
    fidelity = '_w%g' % a.w if a.arch == 'codeformer' else ''
    stem = os.path.join(a.out_dir, '%s_%d_%s%s_b%d_o%d' % (a.arch, SIZE, weights, fidelity, a.batch, a.opset))
    paths = {'onnx': stem + '.onnx', 'input': stem + '_input.npy', 'expect': stem + '_expect.npy',
             'expect_indices': stem + '_expect_indices.npy'}
    info = dict(paths, arch=a.arch, opset=a.opset, weights=weights)
    if a.arch == 'codeformer':
        info['w'] = a.w
    if all(os.path.exists(p) for p in paths.values()):
        info['cached'] = True
        print(json.dumps(info))
        return 0
    os.makedirs(a.out_dir, exist_ok=True)
    model = build(a.arch, a.checkpoint, a.seed, a.w)
    x = torch.rand(a.batch, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(0)) * 2 - 1
    t0 = time.perf_counter()
    with torch.no_grad():
        expect = model(x)
        codes = model.codes(x)
        torch.onnx.export(model, (x,), paths['onnx'] + '.tmp', input_names=['input'], output_names=['output'],
                          opset_version=a.opset, do_constant_folding=True)
    os.replace(paths['onnx'] + '.tmp', paths['onnx'])
    np.save(paths['input'], x.numpy().astype(np.float32))
    np.save(paths['expect'], expect.numpy().astype(np.float32))
    np.save(paths['expect_indices'], codes.numpy().astype(np.int32))
    info.update(torch=torch.__version__, export_s=round(time.perf_counter() - t0, 2),
                onnx_bytes=os.path.getsize(paths['onnx']))
    print(json.dumps(info))
    return 0


if __name__ == '__main__':
    sys.exit(main())
