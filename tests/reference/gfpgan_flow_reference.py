#!/usr/bin/python3
"""GFPGAN's official photo flow, run from the official code installed out of tree: GFPGANer.enhance
(PyPI `gfpgan`, gfpgan/utils.py) with facexlib's FaceRestoreHelper (PyPI `facexlib`,
facexlib/utils/face_restoration_helper.py) and basicsr's img2tensor / tensor2img, around the official
GFPGANv1Clean (gfpgan_official.py) with random weights in the official layout. Nothing of that
code is copied here; install it with

    /usr/bin/python3 -m pip install --no-deps --target /tmp/gfpgan-official gfpgan basicsr facexlib

and point GFPGAN_OFFICIAL at that directory (or pass --official).

What is given instead of the packages' own parts (they download weights or need torchvision):
  detector   FaceRestoreHelper's face_det is a stand-in whose detect_faces(img, conf) returns the
             engine's RetinaFace detections read from --dets (rows x1 y1 x2 y2 score l0x l0y ..
             l4x l4y, those with score > conf): the same detector on both sides, so the test
             compares the flow, not two detectors. get_face_landmarks_5 (the 0.97 threshold,
             eye_dist_threshold 5, only_center_face) runs as published.
  parser     with --parse CKPT.pth, facexlib's own ParseNet (facexlib/parsing/parsenet.py) loaded
             from it (strict) and use_parse=True, as GFPGANer makes the helper; without, use_parse=False
             (the eroded, blurred square mask).
  network    GFPGANer.gfpgan is the official GFPGANv1Clean of --checkpoint called with
             randomize_noise=False (the stored noise, as the engine runs it); GFPGANer.__init__
             is bypassed because it builds the released size (narrow 1) from fixed arguments.
  torchvision  normalize (tensor.sub_(mean).div_(std), what torchvision does) and make_grid
             (not reached for one face) are stand-ins; torchvision is not installed here.
  background with --bg CKPT.pth: the official RealESRGANer (PyPI `realesrgan`, realesrgan/utils.py,
             installed beside the others) as inference_gfpgan.py builds it (scale from the
             checkpoint, tile --bg-tile, tile_pad 10, pre_pad 0; half precision off on the CPU)
             around rrdbnet_reference.py's RRDBNet (the official layout) loaded from CKPT.pth.

  gfpgan_flow_reference.py PHOTO --checkpoint CKPT.pth --dets DETS.json -o OUT.png
        [--upscale N] [--only-center-face] [--weight W] [--parse CKPT.pth] [--save-faces DIR]
        [--matrices OUT.json] [--bg CKPT.pth --bg-tile N]
  gfpgan_flow_reference.py FACE --checkpoint CKPT.pth --aligned -o OUT.png [--weight W] [--save-faces DIR]
        GFPGANer.enhance(face, has_aligned=True): the face resized to 512 (cv2.resize), the network,
        the restored face written (no detector: --dets is not read)
  gfpgan_flow_reference.py --make-checkpoint OUT.pth [--seed S]
        random weights for the small configuration the flow test uses (SMALL below)
  gfpgan_flow_reference.py --lmeds DETS.json...
        prints cv2.estimateAffinePartial2D(landmarks, template, method=cv2.LMEDS) per face of each
        file (JSON: {"affine": [[matrix per face] per file]})

DETS.json: {"faces": [{"box": [x1, y1, x2, y2], "score": s, "landmarks": [x0, y0, .., x4, y4]}]}.
Use /usr/bin/python3 (torch, numpy, cv2). Deterministic (one torch thread).
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stub_modules  # noqa: E402
# torch and the official code are imported by the modes that run the network (--lmeds needs neither).
torch = None
gfpgan_official = None


def _import_torch():
    global torch, gfpgan_official
    import torch as t
    import gfpgan_official as g
    torch, gfpgan_official = t, g

# out_size must stay 512 (the template is the 512 FFHQ one); narrow 1/8 and channel multiplier 1
# keep the network small (64 channels at low resolutions, 4 at 512).
SMALL = dict(out_size=512, num_style_feat=64, channel_multiplier=1, narrow=1 / 8, different_w=True, sft_half=True)


_module = stub_modules.module


class _Detector:
    def __init__(self):
        self.rows = np.zeros((0, 15), np.float32)

    def detect_faces(self, image, conf_threshold=0.8):
        return self.rows[self.rows[:, 4] > conf_threshold]


def load_official(root, parse_ckpt=None):
    """GFPGANer and FaceRestoreHelper from the installed packages, with the stand-ins above."""
    gfpgan_official.load(root)
    stub_modules.torchvision_stubs()

    img_util = _module('basicsr.utils.img_util', os.path.join(root, 'basicsr', 'utils', 'img_util.py'))
    sys.modules['basicsr.utils'].img2tensor = img_util.img2tensor
    sys.modules['basicsr.utils'].tensor2img = img_util.tensor2img
    _module('basicsr.utils.download_util', load_file_from_url=None)
    _module('gfpgan.archs.gfpgan_bilinear_arch', GFPGANBilinear=None)
    _module('gfpgan.archs.gfpganv1_arch', GFPGANv1=None)
    _module('facexlib')
    _module('facexlib.detection', init_detection_model=lambda *a, **k: _Detector())
    def init_parsing_model(*a, **k):
        if parse_ckpt is None:
            return None
        parsenet = _module('facexlib.parsing.parsenet', os.path.join(root, 'facexlib', 'parsing', 'parsenet.py'))
        net = parsenet.ParseNet(in_size=512, out_size=512, parsing_ch=19)
        net.load_state_dict(torch.load(parse_ckpt, map_location='cpu'), strict=True)
        return net.eval()

    _module('facexlib.parsing', init_parsing_model=init_parsing_model)
    _module('facexlib.utils')
    _module('facexlib.utils.misc', os.path.join(root, 'facexlib', 'utils', 'misc.py'))
    helper = _module('facexlib.utils.face_restoration_helper',
                     os.path.join(root, 'facexlib', 'utils', 'face_restoration_helper.py'))
    utils = _module('gfpgan.utils', os.path.join(root, 'gfpgan', 'utils.py'))
    return utils.GFPGANer, helper.FaceRestoreHelper


def read_dets(path):
    with open(path) as f:
        faces = json.load(f)['faces']
    rows = [list(d['box']) + [d['score']] + list(d['landmarks']) for d in faces]
    return np.array(rows, np.float32).reshape(-1, 15)


class _Net:
    """GFPGANer.gfpgan: the official network with the stored noise."""

    def __init__(self, model):
        self.model = model

    def __call__(self, x, return_rgb=False, weight=0.5):
        return self.model(x, return_rgb=return_rgb, randomize_noise=False)


def restore(args):
    _import_torch()
    GFPGANer, FaceRestoreHelper = load_official(args.official, args.parse)
    torch.set_num_threads(1)
    model = gfpgan_official.build(**SMALL).eval()
    sd = torch.load(args.checkpoint, map_location='cpu')
    model.load_state_dict(sd.get('params_ema', sd), strict=True)
    g = object.__new__(GFPGANer)
    g.upscale = args.upscale
    g.bg_upsampler = None
    if args.bg:
        import rrdbnet_reference
        utils_path = os.path.join(args.official, 'realesrgan', 'utils.py')
        _module('realesrgan')
        RealESRGANer = _module('realesrgan.utils', utils_path).RealESRGANer
        net = rrdbnet_reference.load(args.bg)
        g.bg_upsampler = RealESRGANer(scale=net.scale, model_path=args.bg, model=net,
                                      tile=args.bg_tile, tile_pad=10, pre_pad=0, half=False,
                                      device=torch.device('cpu'))
    g.device = torch.device('cpu')
    g.gfpgan = _Net(model)
    g.face_helper = FaceRestoreHelper(args.upscale, face_size=512, crop_ratio=(1, 1), det_model='retinaface_resnet50',
                                      save_ext='png', use_parse=args.parse is not None, device=g.device,
                                      model_rootpath=None)
    if not args.aligned:
        g.face_helper.face_det.rows = read_dets(args.dets)
    img = cv2.imread(args.photo, cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f'{args.photo}: cannot read')
    with torch.no_grad():
        cropped, restored, out = g.enhance(img, has_aligned=args.aligned, only_center_face=args.only_center_face,
                                           paste_back=True, weight=args.weight)
    if args.aligned:
        out = restored[0]
    cv2.imwrite(args.output, out)
    if args.save_faces:
        os.makedirs(args.save_faces, exist_ok=True)
        for i, (c, r) in enumerate(zip(cropped, restored)):
            cv2.imwrite(os.path.join(args.save_faces, f'crop{i}.png'), c)
            cv2.imwrite(os.path.join(args.save_faces, f'restored{i}.png'), r)
    if args.matrices:
        with open(args.matrices, 'w') as f:
            json.dump({'affine': [m.tolist() for m in g.face_helper.affine_matrices]}, f)
    print(json.dumps({'faces': len(restored), 'size': [out.shape[1], out.shape[0]]}))


def make_checkpoint(path, seed):
    _import_torch()
    import make_gfpgan_fixtures
    gfpgan_official.load(None)
    torch.set_num_threads(1)
    model = gfpgan_official.build(**SMALL).eval()
    sd = make_gfpgan_fixtures.randomize(model, seed)
    torch.save({'params_ema': sd}, path)


def lmeds(paths):
    template = np.array([[192.98138, 239.94708], [318.90277, 240.1936], [256.63416, 314.01935],
                         [201.26117, 371.41043], [313.08905, 371.15118]])
    out = []
    for path in paths:
        rows = read_dets(path)
        out.append([cv2.estimateAffinePartial2D(r[5:15].reshape(5, 2), template, method=cv2.LMEDS)[0].tolist()
                     for r in rows])
    print(json.dumps({'affine': out}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('photo', nargs='?')
    ap.add_argument('-o', '--output')
    ap.add_argument('--checkpoint')
    ap.add_argument('--dets')
    ap.add_argument('--upscale', type=int, default=1)
    ap.add_argument('--only-center-face', action='store_true')
    ap.add_argument('--aligned', action='store_true')
    ap.add_argument('--weight', type=float, default=0.5)
    ap.add_argument('--parse')
    ap.add_argument('--bg')
    ap.add_argument('--bg-tile', type=int, default=400)
    ap.add_argument('--save-faces')
    ap.add_argument('--matrices')
    ap.add_argument('--official', default=os.environ.get('GFPGAN_OFFICIAL', '/tmp/gfpgan-official'))
    ap.add_argument('--make-checkpoint')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--lmeds', nargs='+')
    a = ap.parse_args()
    if a.make_checkpoint:
        make_checkpoint(a.make_checkpoint, a.seed)
    elif a.lmeds:
        lmeds(a.lmeds)
    else:
        if not (a.photo and a.output and a.checkpoint and (a.dets or a.aligned)):
            ap.error('PHOTO, -o, --checkpoint and --dets (or --aligned) are needed')
        restore(a)


if __name__ == '__main__':
    main()
