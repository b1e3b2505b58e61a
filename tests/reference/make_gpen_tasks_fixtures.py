#!/usr/bin/python3
"""Generate tests/fixtures/gpen_tasks/: FullGenerator_SR and the colorize / inpaint / seg2face
flows of the official scripts (tests/reference/gpen_tasks_reference.py) on small random models.

- sr_zero.pth: FullGenerator_SR 32 -> 64 whose StyledConvs above 32 have noise.weight 0, so the
  output cannot depend on the noise: sr_input.npy (2, 3, 32, 32) -> sr_zero_out.npy (2, 3, 64, 64),
  checked here to be identical under two independent torch noise draws.
- sr_noise.pth: the same with every noise weight non-zero; sr_seed7_out.npy is its output on
  sr_input.npy with the engine's noise stream of seed 7 (faces 0, 1), sr_torch_out_{a,b}.npy
  with two official-style torch draws (for the statistics of the difference).
- task64.pth: FullGenerator 64; colorize (56x48 gray -> luma transfer; 64x64 gray -> raw
  output), inpaint (64x64 with white strokes), seg2face (80x80 colour-coded map, is_norm=False):
  inputs and expected outputs as PNG.
- yuv_in.png (128x128 random BGR) with cv2 BGR2YUV and YUV2BGR of it.

Usage: /usr/bin/python3 tests/reference/make_gpen_tasks_fixtures.py [--out DIR]
"""
import argparse
import json
import os
import sys

import cv2
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpen_reference as R  # noqa: E402
import gpen_tasks_reference as T  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
FACE = os.path.join(R.SHARED, 'images', 'ffhq_lq_00000.png')
# (in, out, cm, narrow, style_dim): 8 channels up to 32x32, 4 at 64x64.
SR = (32, 64, 1, 1 / 64, 32)
TASK = (64, 1, 1 / 64, 32)
SEED = 7


def sr_model(zero, seed):
    i, o, cm, n, sd = SR
    m = T.FullGeneratorSR(i, o, sd, 8, cm, n).eval()
    m.load_state_dict(T.random_state_dict(m, seed, zero_sr_noise=zero), strict=True)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.path.join(REPO, 'tests', 'fixtures', 'gpen_tasks'))
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    out = a.out
    info = {'generator': 'tests/reference/make_gpen_tasks_fixtures.py', 'torch_version': torch.__version__,
            'cv2_version': cv2.__version__}

    # ---- FullGenerator_SR
    face = cv2.imread(FACE, cv2.IMREAD_COLOR)
    x = torch.cat([R.preprocess(face, SR[0]),
                   torch.rand(1, 3, SR[0], SR[0], generator=torch.Generator().manual_seed(3)) * 2 - 1]).contiguous()
    np.save(os.path.join(out, 'sr_input.npy'), x.numpy())
    for zero, name in ((True, 'sr_zero'), (False, 'sr_noise')):
        m = sr_model(zero, 1101)
        torch.save(m.state_dict(), os.path.join(out, name + '.pth'))
        with torch.no_grad():
            ya = m(x, T.torch_noise_fn(torch.Generator().manual_seed(11)))
            yb = m(x, T.torch_noise_fn(torch.Generator().manual_seed(12)))
            ys = m(x, T.engine_noise_fn(SEED))
        d = float((ya - yb).abs().max())
        if zero:
            assert d == 0.0, d
            np.save(os.path.join(out, 'sr_zero_out.npy'), ya.numpy())
            assert float((ys - ya).abs().max()) == 0.0
            info['sr_zero_std'] = float(ya.std())
        else:
            assert d > 1e-3, d
            np.save(os.path.join(out, 'sr_seed7_out.npy'), ys.numpy())
            info['sr_noise_torch_draws_maxdiff'] = d
            info['sr_noise_torch_draws_rms'] = float((ya - yb).pow(2).mean().sqrt())
    # 8-bit aligned enhance through the official FaceGAN.process on a 40x40 crop.
    crop = cv2.resize(face, (40, 40), interpolation=cv2.INTER_AREA)
    cv2.imwrite(os.path.join(out, 'sr_face40.png'), crop)
    cv2.imwrite(os.path.join(out, 'sr_zero_face40_out.png'), T.facegan_process(sr_model(True, 1101), crop, SR[0]))

    # ---- task model (FullGenerator 64)
    s, cm, n, sd = TASK
    tm = R.build(s, cm, n, sd, 8)
    tm.load_state_dict(T.random_state_dict(tm, 1201), strict=True)
    torch.save(tm.state_dict(), os.path.join(out, 'task64.pth'))
    gray56 = cv2.cvtColor(cv2.cvtColor(cv2.resize(face, (48, 56), interpolation=cv2.INTER_AREA),
                                       cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    gray64 = cv2.cvtColor(cv2.cvtColor(cv2.resize(face, (64, 64), interpolation=cv2.INTER_AREA),
                                       cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    cv2.imwrite(os.path.join(out, 'gray_48x56.png'), gray56)
    cv2.imwrite(os.path.join(out, 'gray_64.png'), gray64)
    cv2.imwrite(os.path.join(out, 'colorize_48x56.png'), T.colorize(tm, gray56, s))
    cv2.imwrite(os.path.join(out, 'colorize_64.png'), T.colorize(tm, gray64, s))
    # Inpainting: the user's already-masked image (white strokes, as the demo paints them).
    masked = cv2.resize(face, (64, 64), interpolation=cv2.INTER_AREA)
    cv2.line(masked, (5, 10), (50, 40), (255, 255, 255), 6)
    cv2.line(masked, (40, 5), (20, 60), (255, 255, 255), 4)
    cv2.imwrite(os.path.join(out, 'masked_64.png'), masked)
    cv2.imwrite(os.path.join(out, 'inpaint_64.png'), T.facegan_process(tm, masked, s))
    # Seg2face: a colour-coded parsing map (blocks of label colours), 80x80 -> bilinear to 64.
    seg = np.zeros((80, 80, 3), np.uint8)
    colors = [(0, 0, 0), (204, 0, 0), (76, 153, 0), (204, 204, 0), (51, 51, 255), (204, 0, 204), (0, 255, 255)]
    for by in range(4):
        for bx in range(4):
            seg[by * 20:(by + 1) * 20, bx * 20:(bx + 1) * 20] = colors[(by * 4 + bx * 3) % len(colors)]
    cv2.circle(seg, (40, 40), 17, (255, 204, 102), -1)
    cv2.imwrite(os.path.join(out, 'seg_80.png'), seg)
    cv2.imwrite(os.path.join(out, 'seg2face_80.png'), T.facegan_process(tm, seg, s, is_norm=False))

    # ---- OpenCV YUV fixed point on random colours
    yin = np.random.default_rng(5).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    cv2.imwrite(os.path.join(out, 'yuv_in.png'), yin)
    cv2.imwrite(os.path.join(out, 'yuv_bgr2yuv.png'), cv2.cvtColor(yin, cv2.COLOR_BGR2YUV))
    cv2.imwrite(os.path.join(out, 'yuv_yuv2bgr.png'), cv2.cvtColor(yin, cv2.COLOR_YUV2BGR))

    with open(os.path.join(out, 'info.json'), 'w') as f:
        json.dump(info, f, indent=1)
    total = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print('wrote %s (%d bytes)' % (out, total), info)
    assert total < 1024 * 1024


if __name__ == '__main__':
    main()
