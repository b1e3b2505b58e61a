#!/usr/bin/python3
"""Fixtures for engine/align, engine/warp and engine/paste (tests/test_align.cpp, test_cpu_warp.cpp,
test_paste.cpp): the image geometry of the official GPEN pipeline computed with OpenCV exactly as
FaceEnhancement.process does it (../shared/reference/gpen-semantics.md, last section).

  /usr/bin/python3 tests/reference/make_align_fixtures.py    # writes tests/fixtures/align/ (~1 s)

The reference code below is written from the semantics document: skimage is not available, so the
Umeyama similarity is implemented here in numpy with the same float32 inputs and steps as the
official align_faces._umeyama. All warps of the pipeline use flags=3 exactly as the official code
does: 3 is cv2.INTER_AREA (not INTER_CUBIC, which is 2), and cv2.warpAffine runs INTER_AREA as
INTER_LINEAR, so the official crops and paste-backs are bilinear. No GPEN network is run: the "restored" faces are deterministic
stand-ins derived from the aligned crops (see STANDIN), which the C++ tests recompute.

Files (uint8 images are PNG, read back as BGR; float arrays are .npy float32):
  transforms.json          reference points for S in 64/256/512/1024 and, for synthetic landmark
                           sets, the forward (image -> crop) and inverse (crop -> image) matrices
                           of the official float32 code and of the same steps in float64
  warp_src_u8.png, warp_src_f32.npy, warp_cases.json, warp_<linear|cubic>_u8_<i>.png,
  warp_<linear|cubic>_f32.npy
                           cv2.warpAffine(INTER_LINEAR / INTER_CUBIC, BORDER_CONSTANT 0) of small
                           random images under assorted matrices (borders, flips, up/down
                           scaling, 1/32 and 1/2048 ties)
  filter_src.png, filter_out.png, blend_src2.png, blend_<alpha>.png
                           cv2.filter2D with the small-face kernel, cv2.addWeighted
  mask_64.npy, mask_256_s2.npy (every 2nd row/column), mask_512_rows.npy, mask_1024_rows.npy
                           the official rectangle mask (rows listed in manifest.json)
  <case>/image.png, <case>/faces.json, <case>/crops.png (crops side by side),
  <case>/full_mask.npy, <case>/full_img.png, <case>/composite.png
                           the whole paste-back of a downscaled photo
"""
import json
import os

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'align'))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared'))
RETINA = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'retinaface'))

# ------------------------------------------------------------------ official pipeline, re-derived

REFERENCE_96x112 = [[30.29459953, 51.69630051], [65.53179932, 51.50139999], [48.02519989, 71.73660278],
                    [33.54930115, 92.3655014], [62.72990036, 92.20410156]]


def reference_points(size):
    """The 5 reference points of an S x S crop: the 96x112 points made square (x + 8), padded by
    0.25 inside (x, y + 28 -> 168x168), scaled by S/168; float64 like the official code."""
    pts = np.array(REFERENCE_96x112, dtype=np.float64)
    pts += np.array([8.0, 0.0])
    pts += np.array([28.0, 28.0])
    return pts * (np.float64(np.float32(size)) / 168)


def umeyama(src, dst, estimate_scale=True, scale=1.0):
    """Least-squares similarity src -> dst (Umeyama 1991, eqs. 38-43), as skimage computes it."""
    num, dim = src.shape
    src_mean = src.mean(axis=0)
    dst_mean = dst.mean(axis=0)
    src_demean = src - src_mean
    dst_demean = dst - dst_mean
    A = dst_demean.T @ src_demean / num
    d = np.ones((dim,), dtype=np.double)
    if np.linalg.det(A) < 0:
        d[dim - 1] = -1
    T = np.eye(dim + 1, dtype=np.double)
    U, S, V = np.linalg.svd(A)
    rank = np.linalg.matrix_rank(A)
    if rank == 0:
        return np.nan * T, scale
    if rank == dim - 1:
        if np.linalg.det(U) * np.linalg.det(V) > 0:
            T[:dim, :dim] = U @ V
        else:
            s = d[dim - 1]
            d[dim - 1] = -1
            T[:dim, :dim] = U @ np.diag(d) @ V
            d[dim - 1] = s
    else:
        T[:dim, :dim] = U @ np.diag(d) @ V
    if estimate_scale:
        scale = 1.0 / src_demean.var(axis=0).sum() * (S @ d)
    T[:dim, dim] = dst_mean - scale * (T[:dim, :dim] @ src_mean.T)
    T[:dim, :dim] *= scale
    return T, scale


def face_transforms(landmarks5x2, size, dtype=np.float32):
    """(tfm, tfm_inv) of warp_and_crop_face: float32 points, Umeyama one way with scale, the other
    way with the reciprocal scale fixed. dtype=float64 runs the same steps in double precision
    (from the same float32 points): how far float32 rounding alone moves the official result."""
    src = np.float32(landmarks5x2).astype(dtype)
    ref = np.float32(reference_points(size)).astype(dtype)
    params, scale = umeyama(src, ref)
    tfm = params[:2, :]
    params, _ = umeyama(ref, src, False, scale=1.0 / scale)
    return tfm, params[:2, :]


def official_mask(size):
    mask = np.zeros((512, 512), np.float32)
    cv2.rectangle(mask, (26, 26), (486, 486), (1, 1, 1), -1, cv2.LINE_AA)
    mask = cv2.GaussianBlur(mask, (101, 101), 4)
    mask = cv2.GaussianBlur(mask, (101, 101), 4)
    return cv2.resize(mask, (size, size))


SMOOTH = np.array(([0.0625, 0.125, 0.0625], [0.125, 0.25, 0.125], [0.0625, 0.125, 0.0625]), dtype='float32')


def paste(img, faces, size, alpha, standin):
    """FaceEnhancement.process after detection (no SR, rectangle mask), with `standin(crop)` in
    place of GPEN. faces: list of (box[4], landmarks[10] as x1, y1, ..., x5, y5)."""
    height, width = img.shape[:2]
    full_mask = np.zeros((height, width), dtype=np.float32)
    full_img = np.zeros(img.shape, dtype=np.uint8)
    base_mask = official_mask(size)
    crops, tfms, tfm_invs = [], [], []
    for box, lm in faces:
        fh, fw = (box[3] - box[1]), (box[2] - box[0])
        tfm, tfm_inv = face_transforms(np.reshape(lm, (5, 2)), size)
        of = cv2.warpAffine(img, tfm, (size, size), flags=3)
        ef = standin(of)
        tmp_mask = cv2.warpAffine(base_mask, tfm_inv, (width, height), flags=3)
        if min(fh, fw) < 100:
            ef = cv2.filter2D(ef, -1, SMOOTH)
        ef = cv2.addWeighted(ef, alpha, of, 1. - alpha, 0.0)
        tmp_img = cv2.warpAffine(ef, tfm_inv, (width, height), flags=3)
        mask = tmp_mask - full_mask
        full_mask[np.where(mask > 0)] = tmp_mask[np.where(mask > 0)]
        full_img[np.where(mask > 0)] = tmp_img[np.where(mask > 0)]
        crops.append(of)
        tfms.append(tfm)
        tfm_invs.append(tfm_inv)
    m3 = full_mask[:, :, np.newaxis]
    out = cv2.convertScaleAbs(img * (1 - m3) + full_img * m3)
    return dict(full_mask=full_mask, full_img=full_img, composite=out, crops=crops, tfm=tfms, tfm_inv=tfm_invs)


# Stand-ins for GPEN's output, recomputed by tests/test_paste.cpp from the crops.
STANDIN = {
    'invert': lambda crop: (255 - crop).astype(np.uint8),
    'mirror': lambda crop: np.ascontiguousarray(crop[:, ::-1]),
}

# ------------------------------------------------------------------ fixture writing


def matrix_list(m):
    return [[float(v) for v in row] for row in np.asarray(m, dtype=np.float64)]


def imwrite(path, img):
    assert cv2.imwrite(path, img, [cv2.IMWRITE_PNG_COMPRESSION, 9]), path


def synthetic_landmarks(rng):
    base = np.array(REFERENCE_96x112, dtype=np.float64)
    base = base - base.mean(axis=0)
    sets = {}

    def place(name, angle_deg, scale, cx, cy, noise=0.0, mirror=False):
        p = base.copy()
        if mirror:
            p[:, 0] = -p[:, 0]
        a = np.deg2rad(angle_deg)
        r = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        p = (p @ r.T) * scale + np.array([cx, cy]) + rng.randn(5, 2) * noise
        sets[name] = np.float32(p).reshape(-1).tolist()

    place('upright', 0, 1.0, 100, 120)
    place('tilted_large', 28, 3.2, 400, 300, noise=2.0)
    place('upside_down_small', 170, 0.35, 20, 15, noise=0.2)
    place('mirrored', -12, 1.7, 250, 90, noise=1.0, mirror=True)
    place('noisy', 5, 0.9, 60, 700, noise=4.0)
    return sets


def write_transforms(rng):
    sizes = [64, 256, 512, 1024]
    data = {'reference_points': {str(s): np.float32(reference_points(s)).reshape(-1).tolist() for s in sizes},
            'landmark_sets': []}
    for name, lm in synthetic_landmarks(rng).items():
        entry = {'name': name, 'landmarks': lm, 'sizes': {}}
        for s in sizes:
            tfm, tfm_inv = face_transforms(np.reshape(lm, (5, 2)), s)
            tfm64, tfm_inv64 = face_transforms(np.reshape(lm, (5, 2)), s, np.float64)
            entry['sizes'][str(s)] = {'forward': matrix_list(tfm), 'inverse': matrix_list(tfm_inv),
                                      'forward_f64': matrix_list(tfm64), 'inverse_f64': matrix_list(tfm_inv64)}
        data['landmark_sets'].append(entry)
    with open(os.path.join(OUT, 'transforms.json'), 'w') as f:
        json.dump(data, f, indent=1)


def write_warps(rng):
    sh, sw, dh, dw = 29, 37, 40, 48
    src8 = rng.randint(0, 256, (sh, sw, 3)).astype(np.uint8)
    # Smooth-ish float content with values beyond [0, 1] so overshoot and sign are exercised.
    yy, xx = np.mgrid[0:sh, 0:sw]
    srcf = (np.sin(xx * 0.7) * np.cos(yy * 0.45) + rng.rand(sh, sw) * 0.5 - 0.1).astype(np.float32)

    def rot(deg, s, cx, cy, tx, ty):
        a = np.deg2rad(deg)
        c, si = np.cos(a) * s, np.sin(a) * s
        return [[c, -si, tx - c * cx + si * cy], [si, c, ty - si * cx - c * cy]]

    cases = [
        ('identity', [[1, 0, 0], [0, 1, 0]]),
        ('shift_subpixel', [[1, 0, 0.3], [0, 1, -1.7]]),
        ('tie_1_over_2048', [[1, 0, 5 + 0.5 / 1024], [0, 1, 3 / 32 + 1.5 / 1024]]),
        ('rotate17_scale1.3', rot(17, 1.3, 18, 14, 24, 20)),
        ('downscale0.4', [[0.4, 0.02, 3.1], [-0.01, 0.41, 2.2]]),
        ('upscale2.7_rot-50', rot(-50, 2.7, 10, 8, 20, 22)),
        ('partly_outside', [[1.1, 0.1, 25.3], [-0.1, 0.9, -9.6]]),
        ('reflection', [[-1, 0.2, 40], [0.1, 1, -3]]),
        ('far_outside', [[1, 0, 500], [0, 1, -300]]),
    ]
    meta = {'src_size': [sw, sh], 'dst_size': [dw, dh], 'cases': [],
            'interpolations': {'linear': cv2.INTER_LINEAR, 'cubic': cv2.INTER_CUBIC}}
    imwrite(os.path.join(OUT, 'warp_src_u8.png'), src8)
    np.save(os.path.join(OUT, 'warp_src_f32.npy'), srcf)
    for i, (name, m) in enumerate(cases):
        meta['cases'].append({'name': name, 'matrix': matrix_list(m), 'index': i})
    for interp, flag in meta['interpolations'].items():
        outs_f = []
        for i, (name, m) in enumerate(cases):
            m = np.array(m, dtype=np.float64)
            imwrite(os.path.join(OUT, 'warp_%s_u8_%d.png' % (interp, i)), cv2.warpAffine(src8, m, (dw, dh), flags=flag))
            outs_f.append(cv2.warpAffine(srcf, m, (dw, dh), flags=flag))
        np.save(os.path.join(OUT, 'warp_%s_f32.npy' % interp), np.stack(outs_f))
    # The official flags=3 is bilinear.
    m = np.array(cases[3][1], dtype=np.float64)
    assert (cv2.warpAffine(src8, m, (dw, dh), flags=3) == cv2.warpAffine(src8, m, (dw, dh), flags=cv2.INTER_LINEAR)).all()
    with open(os.path.join(OUT, 'warp_cases.json'), 'w') as f:
        json.dump(meta, f, indent=1)


def write_filter_blend(rng):
    a = rng.randint(0, 256, (27, 33, 3)).astype(np.uint8)
    b = rng.randint(0, 256, (27, 33, 3)).astype(np.uint8)
    imwrite(os.path.join(OUT, 'filter_src.png'), a)
    imwrite(os.path.join(OUT, 'filter_out.png'), cv2.filter2D(a, -1, SMOOTH))
    imwrite(os.path.join(OUT, 'blend_src2.png'), b)
    alphas = [0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0]
    for al in alphas:
        imwrite(os.path.join(OUT, 'blend_%g.png' % al), cv2.addWeighted(a, al, b, 1. - al, 0.0))
    return alphas


def write_masks():
    m64 = official_mask(64)
    np.save(os.path.join(OUT, 'mask_64.npy'), m64)
    np.save(os.path.join(OUT, 'mask_256_s2.npy'), np.ascontiguousarray(official_mask(256)[::2, ::2]))
    rows512 = [0, 20, 26, 40, 100, 256, 300, 480, 511]
    np.save(os.path.join(OUT, 'mask_512_rows.npy'), official_mask(512)[rows512])
    rows1024 = [0, 45, 60, 512, 1000]
    np.save(os.path.join(OUT, 'mask_1024_rows.npy'), official_mask(1024)[rows1024])
    return {'mask_512_rows': rows512, 'mask_1024_rows': rows1024}


def load_detections(name):
    with open(os.path.join(RETINA, 'detections_mnet_%s.json' % name)) as f:
        return json.load(f)['faces']


def write_case(name, photo, dets_name, size_wh, S, alpha, standin):
    os.makedirs(os.path.join(OUT, name), exist_ok=True)
    full = cv2.imread(os.path.join(SHARED, 'images', photo), cv2.IMREAD_COLOR)
    fx = size_wh[0] / full.shape[1]
    fy = size_wh[1] / full.shape[0]
    img = cv2.resize(full, size_wh, interpolation=cv2.INTER_AREA)
    faces = []
    dets = load_detections(dets_name)
    for d in dets:
        box = np.float32([d['box'][0] * fx, d['box'][1] * fy, d['box'][2] * fx, d['box'][3] * fy])
        lm = np.float32(d['landmarks']).reshape(5, 2) * np.float32([fx, fy])
        faces.append((box, np.float32(lm).reshape(-1)))
    r = paste(img, faces, S, alpha, STANDIN[standin])
    imwrite(os.path.join(OUT, name, 'image.png'), img)
    imwrite(os.path.join(OUT, name, 'crops.png'), np.hstack(r['crops']))
    np.save(os.path.join(OUT, name, 'full_mask.npy'), r['full_mask'])
    imwrite(os.path.join(OUT, name, 'full_img.png'), r['full_img'])
    imwrite(os.path.join(OUT, name, 'composite.png'), r['composite'])
    # The GPEN default alpha = 1: the restored face replaces the crop as it is.
    r1 = paste(img, faces, S, 1.0, STANDIN[standin])
    imwrite(os.path.join(OUT, name, 'composite_alpha1.png'), r1['composite'])
    meta = {
        'source': '%s -> cv2.resize to %dx%d INTER_AREA; detections from tests/fixtures/retinaface scaled alike'
                  % (photo, size_wh[0], size_wh[1]),
        'size': S, 'alpha': alpha, 'standin': standin,
        'faces': [{'box': [float(v) for v in b], 'landmarks': [float(v) for v in lm],
                   'smoothed': bool(min(b[3] - b[1], b[2] - b[0]) < 100),
                   'forward': matrix_list(t), 'inverse': matrix_list(ti)}
                  for (b, lm), t, ti in zip(faces, r['tfm'], r['tfm_inv'])],
        'full_mask_max': float(r['full_mask'].max()),
        'photo': photo,
        'full_res_faces': [{'box': d['box'], 'landmarks': d['landmarks']} for d in dets],
    }
    with open(os.path.join(OUT, name, 'faces.json'), 'w') as f:
        json.dump(meta, f, indent=1)
    return meta


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(20210401)
    write_transforms(rng)
    write_warps(rng)
    alphas = write_filter_blend(rng)
    rows = write_masks()
    # kids: 8 small faces (all smoothed), S = 64, alpha 0.8. ffhq_lq_00001: two overlapping
    # faces, one above and one below the 100-pixel smoothing limit, S = 256, alpha 0.5 (exact
    # halves, so addWeighted's rounding of ties is exercised).
    kids = write_case('kids', 'kids_1024x768.jpg', 'kids_1024x768', (256, 192), 64, 0.8, 'invert')
    ffhq = write_case('ffhq1', 'ffhq_lq_00001.png', 'ffhq_lq_00001', (192, 192), 256, 0.5, 'mirror')
    manifest = {
        'generator': 'tests/reference/make_align_fixtures.py',
        'cv2_version': cv2.__version__, 'numpy_version': np.__version__,
        'blend_alphas': alphas, **rows,
        'standins': {'invert': '255 - crop', 'mirror': 'crop flipped left-right'},
        'cases': {'kids': len(kids['faces']), 'ffhq1': len(ffhq['faces'])},
    }
    with open(os.path.join(OUT, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(OUT) for fn in fns)
    print('wrote', OUT, '(%d bytes)' % total)


if __name__ == '__main__':
    main()
