#!/usr/bin/python3
"""The official GPEN photo pipeline (FaceEnhancement.process of yangxy/GPEN, face_enhancement.py,
without super-resolution; the rectangle paste mask, or with --parse the face-parsing one),
re-created with cv2 + numpy + the two torch references of this directory:

  detect      retinaface_reference.detect (the official detect(): threshold 0.9, NMS 0.4, shrink
              of photos over 1500 px), then the official output layout: boxes, landmarks divided
              by ss in float32, scores divided by ss too, landmarks reshaped (2, 5) -> (5, 2)
  skip        faces whose (score / ss) < 0.9
  align       reference points of an S x S crop (get_reference_facial_points with default_square,
              inner padding 0.25), Umeyama with scale from the float32 landmarks to the float32
              reference points (numpy steps and dtypes of align_faces._umeyama), tfm_inv from a
              second Umeyama the other way with the reciprocal scale fixed, as the official code
              does (not cv2.invertAffineTransform); crop = cv2.warpAffine(img, tfm, (S, S), flags=3)
  restore     GPEN one face at a time: cv2.resize to S, /255, (x - 0.5) / 0.5, BGR -> RGB, model,
              *0.5 + 0.5, RGB -> BGR, clip, *255, truncation (gpen_reference.preprocess/postprocess)
  mask        512x512 rectangle (26,26)-(486,486) LINE_AA, GaussianBlur 101x101 sigma 4 twice,
              cv2.resize to S x S, warped back with tfm_inv (flags=3)
  smoothing   cv2.filter2D with [[1,2,1],[2,4,2],[1,2,1]]/16 when min(box h, box w) < 100
  blend       cv2.addWeighted(ef, alpha, of, 1 - alpha, 0)
  paste       warpAffine(ef, tfm_inv, (W, H), flags=3); where warped mask > accumulated mask both
              take the new values; cv2.convertScaleAbs(img * (1 - m) + full_img * m)

flags=3 is cv2.INTER_AREA (INTER_CUBIC is 2); cv2.warpAffine runs INTER_AREA as INTER_LINEAR,
so every warp of the official pipeline is bilinear. The calls below pass flags=3 as the official
code does, and self_test() checks that this cv2 treats it as bilinear.

  pipeline_reference.py IMAGE -o OUT.png --checkpoint GPEN.pth [--detector RETINA.pth]
        [--alpha A] [--json DETS.json] [--save-faces DIR] [--threads N]
  pipeline_reference.py IMAGE -o OUT.png --size 256 --seed 1      random GPEN-BFR-256 weights
  pipeline_reference.py IMAGE -o OUT.png ... --sr REALESRNET.pth [--sr-tile T] [--sr-fixed]
        use_sr: img_sr = RealESRNet.process(img) (rrdbnet_reference.py; --sr-fixed: with the
        engine's corrections), img = cv2.resize(img, img_sr size), everything else on that img,
        final = convertScaleAbs(img_sr * (1 - full_mask) + full_img * full_mask)
  pipeline_reference.py IMAGE -o OUT.png --checkpoint GPEN.pth --parse PARSENET.pth [--save-faces DIR]
        paste through the face-parsing mask (parsenet_reference.py); DIR also gets labelsKK.npy
  pipeline_reference.py --self-test

Use /usr/bin/python3 (torch, numpy, cv2). Results are deterministic for a fixed torch thread
count (--threads, default 1).
"""
import argparse
import json
import os
import sys
import time

import cv2
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpen_reference as gref  # noqa: E402
import retinaface_reference as rref  # noqa: E402
import parsenet_reference as pref  # noqa: E402

THRESHOLD = 0.9          # FaceEnhancement.threshold
SMALL_FACE = 100         # min(box h, box w) below this: smoothing
TEMPLATE_96x112 = ((30.29459953, 51.69630051), (65.53179932, 51.50139999), (48.02519989, 71.73660278),
                   (33.54930115, 92.3655014), (62.72990036, 92.20410156))
SMOOTH_KERNEL = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], dtype=np.float32) / np.float32(16)
OFFICIAL_WARP_FLAGS = 3  # what the official code passes to every warpAffine


# ----------------------------------------------------------------------------- alignment

def reference_points(size):
    """get_reference_facial_points((S, S), inner_padding_factor=0.25, outer_padding=(0, 0),
    default_square=True), in float64 as the official code returns them (cast to float32 by the
    caller): square the 96x112 template (x + 8), pad it by 0.25 inside (+28: 168x168), then scale
    by np.float32(S) / 168."""
    pts = np.array(TEMPLATE_96x112, dtype=np.float64)
    crop = np.array((96, 112), dtype=np.int64)
    grow = crop.max() - crop                     # (16, 0)
    pts = pts + grow / 2
    crop = crop + grow                           # 112 x 112
    pad = crop * 0.25 * 2
    pts = pts + pad / 2
    crop = crop + np.round(pad).astype(np.int32)  # 168 x 168
    factor = np.array((size, size))[0].astype(np.float32) / crop[0]
    return pts * factor


def umeyama(src, dst, estimate_scale=True, scale=1.0):
    """Least-squares similarity src -> dst (Umeyama 1991). The dtypes follow the arrays given: the
    official code hands float32 points in, so the means, the covariance and the variance are
    float32 numpy results, the SVD/determinants are LAPACK double cast back to float32, and the
    3x3 result is float64. Returns (3x3 matrix, scale)."""
    n, dim = src.shape
    mu_s = src.mean(axis=0)
    mu_d = dst.mean(axis=0)
    ds = src - mu_s
    dd = dst - mu_d
    cov = dd.T @ ds / n
    signs = np.ones((dim,), dtype=np.double)
    if np.linalg.det(cov) < 0:
        signs[-1] = -1
    out = np.eye(dim + 1, dtype=np.double)
    u, sv, vt = np.linalg.svd(cov)
    rank = np.linalg.matrix_rank(cov)
    if rank == 0:
        return np.nan * out, scale
    if rank == dim - 1:
        # a degenerate covariance: keep the rotation proper
        if np.linalg.det(u) * np.linalg.det(vt) > 0:
            out[:dim, :dim] = u @ vt
        else:
            keep = signs[-1]
            signs[-1] = -1
            out[:dim, :dim] = u @ np.diag(signs) @ vt
            signs[-1] = keep
    else:
        out[:dim, :dim] = u @ np.diag(signs) @ vt
    if estimate_scale:
        scale = 1.0 / ds.var(axis=0).sum() * (sv @ signs)
    out[:dim, dim] = mu_d - scale * (out[:dim, :dim] @ mu_s.T)
    out[:dim, :dim] *= scale
    return out, scale


def face_transforms(landmarks_2x5, size):
    """warp_and_crop_face's matrices for official-layout landmarks (2, 5): (tfm, tfm_inv), 2x3
    float64. tfm maps the photo onto the crop; tfm_inv is fitted separately the other way."""
    src = np.float32(landmarks_2x5).T            # (5, 2)
    ref = np.float32(reference_points(size))     # (5, 2)
    fwd, s = umeyama(src, ref)
    inv, _ = umeyama(ref, src, False, scale=1.0 / s)
    return fwd[:2, :], inv[:2, :]


# ----------------------------------------------------------------------------- mask / GPEN

def paste_mask(size):
    m = np.zeros((512, 512), np.float32)
    cv2.rectangle(m, (26, 26), (486, 486), (1, 1, 1), -1, cv2.LINE_AA)
    m = cv2.GaussianBlur(m, (101, 101), 4)
    m = cv2.GaussianBlur(m, (101, 101), 4)
    return cv2.resize(m, (size, size))          # what process() does to the mask of every face


def gpen_face(model, crop):
    """FaceGAN.process: one uint8 BGR crop -> uint8 BGR restored face."""
    x = gref.preprocess(crop, model.size)
    with torch.no_grad():
        y = model(x)
    return gref.postprocess(y)


# ----------------------------------------------------------------------------- detection

def detect(net, img):
    """RetinaFaceDetection.detect: (dets (N, 5) float32 [x1, y1, x2, y2, score / ss], landmarks
    (N, 10) float32 [x1..x5, y1..y5]) in photo pixels, NMS order; plus the plain face list of
    retinaface_reference (interleaved landmarks, softmax scores) and ss."""
    trace = {}
    faces = rref.detect(net, img, trace=trace)
    ss = np.float32(trace['ss'])
    dets = np.zeros((len(faces), 5), np.float32)
    lms = np.zeros((len(faces), 10), np.float32)
    for i, f in enumerate(faces):
        dets[i, :4] = f['box']                   # already / ss in float32
        dets[i, 4] = np.float32(f['score']) / ss
        lms[i] = np.float32(f['landmarks']).reshape(5, 2).T.reshape(-1)
    return dets, lms, faces, float(trace['ss'])


# ----------------------------------------------------------------------------- process

def process(img, model, net, alpha=1.0, dets=None, landmarks=None, restore=None, background=None, parser=None):
    """FaceEnhancement.process(img) with use_sr False and the rectangle mask. dets/landmarks:
    detections in the official layout (as detect() returns them) to skip the detector;
    restore(crop, k): GPEN's output for the k-th restored face (default: run `model`), e.g. the
    faces of an earlier run to redo the paste with another alpha.
    parser: a parsenet_reference.ParseNet: each face is pasted through its face-parsing mask
    (FaceParse.process of the raw GPEN output, mask_postprocess, cv2.resize to S) instead of
    the rectangle, as the official flow has done since December 2021.
    Returns a dict: composite, crops, restored (GPEN outputs before smoothing/blend), used
    (indices into dets of the faces restored), tfm, tfm_inv, full_mask, full_img; with a parser
    also labels (the 512 x 512 class maps)."""
    if dets is None:
        dets, landmarks = detect(net, img)[:2]
    size = model.size
    if restore is None:
        def restore(crop, k):
            return gpen_face(model, crop)
    height, width = img.shape[:2]
    full_mask = np.zeros((height, width), dtype=np.float32)
    full_img = np.zeros(img.shape, dtype=np.uint8)
    base_mask = paste_mask(size)
    r = dict(crops=[], restored=[], used=[], tfm=[], tfm_inv=[], smoothed=[], labels=[])
    for i, (faceb, pts) in enumerate(zip(dets, landmarks)):
        if faceb[4] < THRESHOLD:
            continue
        fh, fw = (faceb[3] - faceb[1]), (faceb[2] - faceb[0])
        tfm, tfm_inv = face_transforms(np.reshape(pts, (2, 5)), size)
        of = cv2.warpAffine(img, tfm, (size, size), flags=OFFICIAL_WARP_FLAGS)
        ef = restore(of, len(r['restored']))
        r['crops'].append(of)
        r['restored'].append(ef)
        face_mask = base_mask
        if parser is not None:
            labels, pm = pref.face_parse_labels(parser, ef)
            r['labels'].append(labels)
            face_mask = cv2.resize(pref.mask_postprocess(pm / 255.), (size, size))
        tmp_mask = cv2.warpAffine(face_mask, tfm_inv, (width, height), flags=OFFICIAL_WARP_FLAGS)
        smoothed = bool(min(fh, fw) < SMALL_FACE)
        if smoothed:
            ef = cv2.filter2D(ef, -1, SMOOTH_KERNEL)
        ef = cv2.addWeighted(ef, alpha, of, 1. - alpha, 0.0)
        tmp_img = cv2.warpAffine(ef, tfm_inv, (width, height), flags=OFFICIAL_WARP_FLAGS)
        newer = (tmp_mask - full_mask) > 0
        full_mask[newer] = tmp_mask[newer]
        full_img[newer] = tmp_img[newer]
        r['used'].append(i)
        r['tfm'].append(tfm)
        r['tfm_inv'].append(tfm_inv)
        r['smoothed'].append(smoothed)
    m = full_mask[:, :, np.newaxis]
    bg = img if background is None else background  # use_sr: img_sr
    r['composite'] = cv2.convertScaleAbs(bg * (1 - m) + full_img * m)
    r['full_mask'] = full_mask
    r['full_img'] = full_img
    return r


# ----------------------------------------------------------------------------- checks / CLI

def self_test():
    # flags=3 is bilinear in warpAffine
    rng = np.random.RandomState(0)
    src = rng.randint(0, 256, (31, 29, 3)).astype(np.uint8)
    m = np.array([[0.9, 0.2, 1.3], [-0.15, 1.1, -2.7]])
    a = cv2.warpAffine(src, m, (40, 36), flags=OFFICIAL_WARP_FLAGS)
    assert (a == cv2.warpAffine(src, m, (40, 36), flags=cv2.INTER_LINEAR)).all()
    assert not (a == cv2.warpAffine(src, m, (40, 36), flags=cv2.INTER_CUBIC)).all()
    # reference points: the semantics doc's formula
    want = (np.array(TEMPLATE_96x112) + [36.0, 28.0]) * (256 / 168)
    assert np.abs(reference_points(256) - want).max() < 1e-12
    # Umeyama recovers a similarity exactly (float64) and tfm_inv inverts tfm (float32 path)
    ang, s, t = 0.3, 1.7, np.array([5.0, -3.0])
    rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]]) * s
    p = rng.rand(5, 2) * 100
    q = p @ rot.T + t
    T, sc = umeyama(p, q)
    assert abs(sc - s) < 1e-12 and np.abs(T[:2, :2] - rot).max() < 1e-12 and np.abs(T[:2, 2] - t).max() < 1e-9
    tfm, tfm_inv = face_transforms(np.float32(p).T * 2 + 100, 256)
    comp = np.vstack([tfm_inv, [0, 0, 1]]) @ np.vstack([tfm, [0, 0, 1]])
    assert np.abs(comp - np.eye(3)).max() < 1e-5, comp
    # mask: 1 inside, ~0 at the corners
    mk = paste_mask(256)
    assert mk.shape == (256, 256) and abs(mk[128, 128] - 1) < 1e-6 and mk[0, 0] < 1e-6
    print('self-test OK')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('image', nargs='?')
    ap.add_argument('-o', '--out', help='composite (PNG recommended)')
    ap.add_argument('--checkpoint', help='GPEN .pth; omit for random weights (--size, --seed)')
    ap.add_argument('--size', type=int, default=256)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--detector', default=rref.MNET_WEIGHTS)
    ap.add_argument('--alpha', type=float, default=1.0)
    ap.add_argument('--json', help='write the detections and per-face data as JSON')
    ap.add_argument('--save-faces', help='directory for the crops and GPEN outputs')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--parse', help='ParseNet .pth: paste through the face-parsing mask (the official default)')
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('--sr', help='RealESRNet checkpoint (params_ema): background super-resolution')
    ap.add_argument('--sr-tile', type=int, default=0)
    ap.add_argument('--sr-fixed', action='store_true')
    a = ap.parse_args(argv)
    if a.self_test or not a.image:
        self_test()
        return 0
    torch.set_num_threads(a.threads)
    if a.checkpoint:
        model = gref.load(a.checkpoint)
    else:
        cm, narrow = {256: (1, 0.5), 512: (2, 1.0), 1024: (2, 1.0)}[a.size]
        model = gref.random_model(a.size, cm, narrow, a.seed)
    net = rref.load(a.detector)
    img = cv2.imread(a.image, cv2.IMREAD_COLOR)
    if img is None:
        raise SystemExit('cannot read %s' % a.image)
    t0 = time.perf_counter()
    img_sr = None
    if a.sr:
        import rrdbnet_reference as srref
        img_sr = srref.process(srref.load(a.sr), img, a.sr_tile, a.sr_fixed)
        img = cv2.resize(img, (img_sr.shape[1], img_sr.shape[0]))
    dets, lms, faces, ss = detect(net, img)
    parser = pref.load(a.parse) if a.parse else None
    r = process(img, model, net, a.alpha, dets, lms, background=img_sr, parser=parser)
    dt = time.perf_counter() - t0
    if a.out:
        assert cv2.imwrite(a.out, r['composite'])
    if a.save_faces:
        os.makedirs(a.save_faces, exist_ok=True)
        for k, (of, ef) in enumerate(zip(r['crops'], r['restored'])):
            cv2.imwrite(os.path.join(a.save_faces, 'crop%02d.png' % k), of)
            cv2.imwrite(os.path.join(a.save_faces, 'face%02d.png' % k), ef)
        for k, lab in enumerate(r['labels']):
            np.save(os.path.join(a.save_faces, 'labels%02d.npy' % k), lab)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(describe(img, faces, ss, r, a.alpha, model.size), f, indent=1)
    print('%s: %d faces found, %d restored, %.1f s' % (a.image, len(faces), len(r['used']), dt))
    return 0


def describe(img, faces, ss, r, alpha, size):
    """JSON-ready record of a run: detections (retinaface_reference layout) and, per restored
    face, the official matrices and whether it was smoothed."""
    used = []
    for k, i in enumerate(r['used']):
        used.append({'detection': int(i), 'smoothed': r['smoothed'][k],
                     'tfm': [[float(v) for v in row] for row in r['tfm'][k]],
                     'tfm_inv': [[float(v) for v in row] for row in r['tfm_inv'][k]]})
    return {'width': int(img.shape[1]), 'height': int(img.shape[0]), 'ss': ss, 'size': size, 'alpha': alpha,
            'faces': faces, 'restored': used}


if __name__ == '__main__':
    sys.exit(main())
