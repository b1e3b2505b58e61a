#!/usr/bin/python3
"""Small image-decoding and resize fixtures for tests/test_image.cpp, made with OpenCV (the
library the official GPEN code reads and resizes images with).

  /usr/bin/python3 tests/reference/make_image_fixtures.py    # writes tests/fixtures/image/

Files: tiny images in the formats the engine reads (PNG 8/16-bit, gray, RGBA, palette; BMP 24/32;
JPEG baseline and progressive) with cv2.imread(IMREAD_COLOR) of each as <name>.bgr.npy, and
cv2.resize INTER_LINEAR results of a float and an 8-bit image (resize_*.npy)."""
import os

import cv2
import numpy as np

OUT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'image'))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(7)
    h, w = 23, 37
    # Smooth content so that JPEG decoders agree closely.
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 6 + yy * 2) % 256, (yy * 9 + 40) % 256, (xx * 3 + yy * 5 + 90) % 256], -1).astype(np.uint8)
    noisy = rng.randint(0, 256, (h, w, 3)).astype(np.uint8)
    files = {}
    cv2.imwrite(os.path.join(OUT, 'rgb8.png'), noisy)
    cv2.imwrite(os.path.join(OUT, 'gray8.png'), noisy[:, :, 1])
    rgba = np.dstack([noisy, rng.randint(0, 256, (h, w, 1)).astype(np.uint8)])
    cv2.imwrite(os.path.join(OUT, 'rgba8.png'), rgba)
    cv2.imwrite(os.path.join(OUT, 'rgb16.png'), (noisy.astype(np.uint16) * 257 + rng.randint(0, 200, (h, w, 3))).astype(np.uint16))
    cv2.imwrite(os.path.join(OUT, 'bgr24.bmp'), noisy)
    cv2.imwrite(os.path.join(OUT, 'bgra32.bmp'), rgba)
    cv2.imwrite(os.path.join(OUT, 'baseline.jpg'), base, [cv2.IMWRITE_JPEG_QUALITY, 95])
    cv2.imwrite(os.path.join(OUT, 'progressive.jpg'), base, [cv2.IMWRITE_JPEG_QUALITY, 95, cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    for f in sorted(os.listdir(OUT)):
        if f.endswith(('.png', '.bmp', '.jpg')):
            img = cv2.imread(os.path.join(OUT, f), cv2.IMREAD_COLOR)
            np.save(os.path.join(OUT, f + '.bgr.npy'), img)
    # Resize: float image with fx/fy (GPEN detect's shrink) and with an explicit size, 8-bit too.
    src = (rng.rand(29, 41, 3) * 255).astype(np.float32)
    np.save(os.path.join(OUT, 'resize_src_f32.npy'), src)
    np.save(os.path.join(OUT, 'resize_f32_fx0.37.npy'), cv2.resize(src, (0, 0), fx=0.37, fy=0.37))
    np.save(os.path.join(OUT, 'resize_f32_to_64x50.npy'), cv2.resize(src, (64, 50)))
    np.save(os.path.join(OUT, 'resize_f32_to_20x13.npy'), cv2.resize(src, (20, 13)))
    src8 = noisy
    np.save(os.path.join(OUT, 'resize_src_u8.npy'), src8)
    np.save(os.path.join(OUT, 'resize_u8_to_50x31.npy'), cv2.resize(src8, (50, 31)))
    np.save(os.path.join(OUT, 'resize_u8_to_16x11.npy'), cv2.resize(src8, (16, 11)))
    print('wrote', OUT)


if __name__ == '__main__':
    main()
