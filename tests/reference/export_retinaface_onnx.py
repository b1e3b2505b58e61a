#!/usr/bin/python3
"""Exports retinaface_reference.py's RetinaFace (mobilenet0.25 or ResNet-50, from the checkpoint
given) to ONNX for the ONNX Runtime / OpenVINO peers of `gpen bench --arch retinaface`.

The network input is the one the engine's detect() feeds for --image: the photo (shrunk only
past 1500 pixels, as GPEN's detector does), minus the BGR mean, NCHW; the export has that fixed
shape. The three outputs are loc, conf (softmaxed) and landms. Writes
DIR/retinaface_<backbone>_<checkpoint stem>_<w>x<h>.onnx, ..._input.npy and ..._expect.npy (the
PyTorch forward's three outputs concatenated along the last axis, (1, P, 16)), and prints one
JSON line with the paths and the export time.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import retinaface_reference as R  # noqa: E402


def paths(out_dir, checkpoint, image):
    x, _ = R.net_input(R.read_bgr(image))
    stem = os.path.splitext(os.path.basename(checkpoint))[0]
    parent = os.path.basename(os.path.dirname(os.path.abspath(checkpoint)))
    tag = '%s_%s_%dx%d' % (parent, stem, x.shape[3], x.shape[2])
    base = os.path.join(out_dir, 'retinaface_' + tag)
    return base + '.onnx', base + '_input.npy', base + '_expect.npy', x


class Flat(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--checkpoint', required=True, help='the .pth (official layout)')
    ap.add_argument('--image', required=True)
    ap.add_argument('--out-dir', required=True)
    ap.add_argument('--threads', type=int, default=0)
    a = ap.parse_args(argv)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    os.makedirs(a.out_dir, exist_ok=True)
    onnx_path, in_path, exp_path, x = paths(a.out_dir, a.checkpoint, a.image)
    t0 = time.perf_counter()
    net = R.load(a.checkpoint).eval()
    with torch.no_grad():
        loc, conf, landms = net(x)
        expect = torch.cat([loc, conf, landms], -1).numpy().astype(np.float32)
        tmp = onnx_path + '.tmp'
        torch.onnx.export(Flat(net), (x,), tmp, input_names=['input'], output_names=['loc', 'conf', 'landms'],
                          opset_version=13, do_constant_folding=True)
    os.replace(tmp, onnx_path)
    np.save(in_path, x.numpy())
    np.save(exp_path, expect)
    print(json.dumps({'onnx': onnx_path, 'input': in_path, 'expect': exp_path, 'backbone': net.backbone,
                      'input_hw': [int(x.shape[2]), int(x.shape[3])], 'export_s': round(time.perf_counter() - t0, 2)}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
