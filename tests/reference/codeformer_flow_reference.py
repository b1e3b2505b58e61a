#!/usr/bin/python3
"""CodeFormer's official photo flow, run from the official code installed out of tree: the per-image
steps of inference_codeformer.py (PyPI `codeformer-pip`, codeformer/inference_codeformer.py) with
the FaceRestoreHelper of CodeFormer's facelib (codeformer/facelib/utils/face_restoration_helper.py)
and basicsr's img2tensor / tensor2img, around the official CodeFormer network with the weights of
tests/reference/make_codeformer_fixtures.py's rule (its reduced transformer, the full VQGAN).
Nothing of that code is copied here; install it with

    /usr/bin/python3 -m pip install --no-deps --target /tmp/codeformer-official codeformer-pip

and point CODEFORMER_PIP at that directory (or pass --official). inference_codeformer.py runs
its loop under `if __name__ == "__main__"`, so the loop is restated here call for call:
read_image, get_face_landmarks_5(only_center_face, resize=640, eye_dist_threshold=5),
align_warp_face, img2tensor(face / 255.), normalize 0.5, net(x, w=w, adain=True)[0],
tensor2img(min_max=(-1, 1)), add_restored_face(restored, cropped), get_inverse_affine,
paste_faces_to_input_image() (no background upsampler); with --aligned: cv2.resize to 512,
is_gray, the network, add_restored_face, the restored face written (cv2.imwrite).

What is given instead of the packages' own parts (they download weights or need torchvision):
  detector   FaceRestoreHelper's face_detector is a stand-in whose detect_faces(img) returns the
             engine's RetinaFace detections read from --dets (rows x1 y1 x2 y2 score l0x l0y ..
             l4x l4y, those with score > 0.8, detect_faces' default), made on the image the helper
             hands the detector: --det-input holds that image as the engine made it, and the
             stand-in fails unless the helper's own image (read_image's upsizing, then the
             resize to 640) equals it pixel for pixel.
  parser     with --parse CKPT.pth: the official ParseNet of facelib/parsing/parsenet.py loaded
             from it (strict); without, use_parse=False.
  torchvision  normalize (tensor.sub_(mean).div_(std)) and make_grid (not reached) are stand-ins.
  background with --bg CKPT.pth: the package's own RealESRGANer
             (codeformer/basicsr/utils/realesrgan_utils.py) as set_realesrgan() builds it (tile
             --bg-tile, tile_pad 40, pre_pad 0; half precision off on the CPU) around
             rrdbnet_reference.py's RRDBNet (the official layout) loaded from CKPT.pth, its
             enhance(img, outscale=upscale) handed to the paste, as the script does; with
             --face-upsample that upsampler is the paste's face_upsampler too (the script's
             --face_upsample with --bg_upsampler realesrgan).

One correction, as the engine makes it: on a gray photo the restored faces take the crop's tones
(adain_npy) in float64 and may leave [0, 255]; paste_faces_to_input_image then casts the whole
photo to uint16 when its largest value passes 256 (a 16-bit PNG whose negative values wrapped to
65535). The helper's numpy is wrapped so that this check sees 0: the final float64 image is kept,
and the output is that image clamped to [0, 255] and truncated to 8 bits (what astype(uint8) does
within range). The JSON line reports how many values the clamp moved (those the cast would wrap).

  codeformer_flow_reference.py PHOTO -o OUT.png --dets DETS.json --det-input IMG.png [--w W]
        [--upscale N] [--only-center-face] [--parse CKPT.pth] [--save-faces DIR]
        [--bg CKPT.pth --bg-tile N [--face-upsample]]
  codeformer_flow_reference.py FACE --aligned -o OUT.png [--w W]

DETS.json: {"faces": [{"box": [x1, y1, x2, y2], "score": s, "landmarks": [x0, y0, .., x4, y4]}]}.
Use /usr/bin/python3 (torch, numpy, cv2). Deterministic (one torch thread).
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stub_modules  # noqa: E402


_module = stub_modules.module
normalize = stub_modules.normalize


class _Detector:
    def __init__(self, rows, expected):
        self.rows, self.expected = rows, expected

    def detect_faces(self, image, conf_threshold=0.8, nms_threshold=0.4, use_origin_size=True):
        if self.expected is None or image.shape != self.expected.shape or not np.array_equal(image, self.expected):
            sys.exit("the helper's detector input differs from the engine's (--det-input)")
        return self.rows[self.rows[:, 4] > conf_threshold]


class _RecordingNumpy:
    """numpy for the helper module, except that np.max records its argument and returns 0."""

    def __init__(self):
        self.last = None

    def __getattr__(self, name):
        return getattr(np, name)

    def max(self, a, *args, **kw):
        self.last = a
        return 0


def load_official(root, parse_ckpt):
    """FaceRestoreHelper, img2tensor / tensor2img and the network from the installed package."""
    os.environ["CODEFORMER_PIP"] = root
    import make_codeformer_fixtures as fixtures  # the weight rule and the configuration
    from make_transformer_fixtures import load_official as load_arch
    arch = load_arch()  # stubs the codeformer package, then loads codeformer_arch / vqgan_arch
    stub_modules.torchvision_stubs()
    base = os.path.join(root, "codeformer")
    img_util = _module("codeformer.basicsr.utils.img_util", os.path.join(base, "basicsr", "utils", "img_util.py"))
    _module("codeformer.basicsr.utils.download_util", load_file_from_url=None)
    _module("codeformer.basicsr.utils.misc", get_device=lambda: torch.device("cpu"))
    _module("codeformer.facelib")
    _module("codeformer.facelib.utils")
    misc = _module("codeformer.facelib.utils.misc", os.path.join(base, "facelib", "utils", "misc.py"))
    parsenet = _module("codeformer.facelib.parsing.parsenet", os.path.join(base, "facelib", "parsing", "parsenet.py"))

    def init_parsing_model(model_name="parsenet", device=None, **kw):
        if parse_ckpt is None:
            return None
        net = parsenet.ParseNet(in_size=512, out_size=512, parsing_ch=19)
        net.load_state_dict(torch.load(parse_ckpt, map_location="cpu"), strict=True)
        return net.eval()

    _module("codeformer.facelib.parsing", init_parsing_model=init_parsing_model)
    _module("codeformer.facelib.detection", init_detection_model=lambda *a, **k: None)
    helper = _module("codeformer.facelib.utils.face_restoration_helper",
                     os.path.join(base, "facelib", "utils", "face_restoration_helper.py"))
    net = arch.CodeFormer(**fixtures.CONFIG).eval()
    fixtures.weights(net)
    helper.np = _RecordingNumpy()
    realesrgan = _module("codeformer.basicsr.utils.realesrgan_utils",
                         os.path.join(base, "basicsr", "utils", "realesrgan_utils.py"))
    return helper, img_util, misc, net, realesrgan.RealESRGANer


def read_dets(path):
    with open(path) as f:
        faces = json.load(f)["faces"]
    rows = [list(d["box"]) + [d["score"]] + list(d["landmarks"]) for d in faces]
    return np.array(rows, np.float32).reshape(-1, 15)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("photo")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--dets")
    ap.add_argument("--det-input")
    ap.add_argument("--w", type=float, default=0.5)
    ap.add_argument("--upscale", type=int, default=1)
    ap.add_argument("--only-center-face", action="store_true")
    ap.add_argument("--aligned", action="store_true")
    ap.add_argument("--parse")
    ap.add_argument("--save-faces")
    ap.add_argument("--bg")
    ap.add_argument("--bg-tile", type=int, default=400)
    ap.add_argument("--face-upsample", action="store_true")
    ap.add_argument("--official", default=os.environ.get("CODEFORMER_PIP", "/tmp/codeformer-official"))
    a = ap.parse_args()
    if not a.aligned and not (a.dets and a.det_input):
        ap.error("--dets and --det-input are needed (or --aligned)")
    if a.face_upsample and not a.bg:
        ap.error("--face-upsample runs the background upsampler (--bg) on the faces")
    torch.set_num_threads(1)
    helper_mod, img_util, misc, net, RealESRGANer = load_official(a.official, a.parse)
    helper = helper_mod.FaceRestoreHelper(a.upscale, face_size=512, crop_ratio=(1, 1), det_model="retinaface_resnet50",
                               save_ext="png", use_parse=a.parse is not None, device=torch.device("cpu"))
    if a.parse is None:
        helper.use_parse = False
    img = cv2.imread(a.photo, cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f"{a.photo}: cannot read")
    if a.aligned:
        img = cv2.resize(img, (512, 512), interpolation=cv2.INTER_LINEAR)
        helper.is_gray = misc.is_gray(img, threshold=10)
        helper.cropped_faces = [img]
    else:
        helper.face_detector = _Detector(read_dets(a.dets), cv2.imread(a.det_input, cv2.IMREAD_COLOR))
        helper.read_image(img)
        helper.get_face_landmarks_5(only_center_face=a.only_center_face, resize=640, eye_dist_threshold=5)
        helper.align_warp_face()
    for cropped in helper.cropped_faces:
        x = img_util.img2tensor(cropped / 255.0, bgr2rgb=True, float32=True)
        normalize(x, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), inplace=True)
        with torch.no_grad():
            out = net(x.unsqueeze(0), w=a.w, adain=True)[0]
            restored = img_util.tensor2img(out, rgb2bgr=True, min_max=(-1, 1))
        helper.add_restored_face(restored.astype("uint8"), cropped)
    if a.aligned:
        cv2.imwrite(a.output, helper.restored_faces[0])
        result = helper.restored_faces[0]
    else:
        bg_img = upsampler = None
        if a.bg:
            import rrdbnet_reference
            sr = rrdbnet_reference.load(a.bg)
            upsampler = RealESRGANer(scale=sr.scale, model_path=a.bg, model=sr, tile=a.bg_tile, tile_pad=40, pre_pad=0,
                                     half=False, device=torch.device("cpu"))
            bg_img = upsampler.enhance(img, outscale=a.upscale)[0]
        helper.get_inverse_affine(None)
        helper.paste_faces_to_input_image(upsample_img=bg_img, face_upsampler=upsampler if a.face_upsample else None)
        final = np.asarray(helper_mod.np.last, dtype=np.float64)
        clamped = int(np.count_nonzero((final <= -1) | (final >= 256)))  # where the cast would differ
        result = np.clip(final, 0, 255).astype(np.uint8)
        cv2.imwrite(a.output, result)
    if a.save_faces:
        os.makedirs(a.save_faces, exist_ok=True)
        for i, (c, r) in enumerate(zip(helper.cropped_faces, helper.restored_faces)):
            cv2.imwrite(os.path.join(a.save_faces, f"crop{i}.png"), c)
            cv2.imwrite(os.path.join(a.save_faces, f"restored{i}.png"), r)
    print(json.dumps({"faces": len(helper.restored_faces), "gray": bool(helper.is_gray),
                      "clamped": 0 if a.aligned else clamped,
                      "size": [int(result.shape[1]), int(result.shape[0])]}))


if __name__ == "__main__":
    main()
