#!/usr/bin/python3
"""Decoder fixtures for tests/test_image_codecs.cpp: every JPEG, PNG and WebP flavour users have,
each with cv2.imread(IMREAD_COLOR) of it (Debian's python3-opencv, the official flow's decoder).

  /usr/bin/python3 tests/reference/make_codec_fixtures.py   # writes tests/fixtures/image/codec/

Needs Debian's libjpeg-turbo-progs (cjpeg, jpegtran) and python3-pil. Files:
  jpeg_*.jpg      baseline 4:4:4/4:2:2/4:2:0/4:4:0, gray, progressive, restart markers, arithmetic,
                  optimized Huffman, CMYK (Adobe, as Photoshop/PIL write it), a jpegtran scan script
  orient<k>.jpg   EXIF orientation k = 1..8 (cv2 applies it); orient6.png (eXIf chunk, applied too);
                  orient6.webp (EXIF chunk; OpenCV 4.6 ignores it)
  png_*.png       1/2/4/8/16-bit gray, 8/16-bit RGB, gray+alpha, RGBA 8/16, palette, palette+tRNS,
                  gray+tRNS, Adam7 interlaced; written by the small encoder below so that every
                  colour type and depth is reachable
  webp_*.webp     lossy, lossless, lossy+alpha, lossless+alpha
  cv2_imwrite_q*.jpg  cv2.imwrite of png_rgb8.png's pixels (default quality 95, and 70)
  <file>.bgr.npy  cv2.imread(file, IMREAD_COLOR); <file>.raw.npy with IMREAD_IGNORE_ORIENTATION
  shared.json     shape and CRC-32 of cv2.imread of each shared photo (../shared/images)
"""
import json
import os
import struct
import subprocess
import tempfile
import zlib

import cv2
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, '..', 'fixtures', 'image', 'codec'))
SHARED = os.path.normpath(os.path.join(HERE, '..', '..', '..', 'shared', 'images'))
H, W = 37, 45  # odd sizes: partial MCUs at the right and bottom edges


def photo(rng):
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    base = np.stack([128 + 90 * np.sin(xx / 6 + yy / 9), 128 + 80 * np.cos(yy / 5), 60 + 3 * xx + 2 * yy], -1)
    return np.clip(base + rng.normal(0, 18, (H, W, 3)), 0, 255).astype(np.uint8)  # RGB


def run(*cmd):
    subprocess.run(cmd, check=True)


def chunk(tag, data):
    return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data) & 0xffffffff)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png_bytes(samples, color_type, depth, interlace=False, plte=None, trns=None, exif=None):
    """samples: HxWxC integer array of the stored sample values."""
    h, w, c = samples.shape

    def rows(img):
        out = b''
        for r in img:
            if depth < 8:
                bits = ''.join(format(int(v), '0%db' % depth) for v in r.reshape(-1))
                bits += '0' * (-len(bits) % 8)
                line = int(bits, 2).to_bytes(len(bits) // 8, 'big') if bits else b''
            elif depth == 8:
                line = r.astype(np.uint8).tobytes()
            else:
                line = r.astype('>u2').tobytes()
            out += b'\0' + line
        return out

    if interlace:
        raw = b''
        for x0, y0, dx, dy in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.size:
                raw += rows(sub)
    else:
        raw = rows(samples)
    ihdr = struct.pack('>IIBBBBB', w, h, depth, color_type, 0, 0, 1 if interlace else 0)
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr)
    if exif is not None:
        out += chunk(b'eXIf', exif)
    if plte is not None:
        out += chunk(b'PLTE', plte.astype(np.uint8).tobytes())
    if trns is not None:
        out += chunk(b'tRNS', trns)
    return out + chunk(b'IDAT', zlib.compress(raw, 6)) + chunk(b'IEND', b'')


def tiff_orientation(k, big_endian=False):
    e = '>' if big_endian else '<'
    head = (b'MM' if big_endian else b'II') + struct.pack(e + 'HI', 42, 8)
    ifd = struct.pack(e + 'H', 2) + struct.pack(e + 'HHI', 0x0112, 3, 1) + struct.pack(e + 'HH', k, 0)
    ifd += struct.pack(e + 'HHI', 0x0131, 2, 4) + b'gpn\0' + struct.pack(e + 'I', 0)
    return head + ifd


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    rng = np.random.RandomState(14)
    rgb = photo(rng)
    with tempfile.TemporaryDirectory() as tmp:
        ppm = os.path.join(tmp, 'in.ppm')
        Image.fromarray(rgb).save(ppm)
        pgm = os.path.join(tmp, 'in.pgm')
        Image.fromarray(rgb[:, :, 1]).save(pgm)
        jpegs = {
            'jpeg_444': ['-sample', '1x1'], 'jpeg_422': ['-sample', '2x1'], 'jpeg_420': ['-sample', '2x2'],
            'jpeg_440': ['-sample', '1x2'], 'jpeg_progressive_420': ['-progressive', '-sample', '2x2'],
            'jpeg_progressive_444': ['-progressive', '-sample', '1x1'],
            'jpeg_restart': ['-restart', '1B', '-sample', '2x2'], 'jpeg_arithmetic': ['-arithmetic'],
            'jpeg_arithmetic_progressive': ['-arithmetic', '-progressive'], 'jpeg_optimized': ['-optimize'],
            'jpeg_q50_420': ['-quality', '50'],
        }
        for name, args in jpegs.items():
            run('cjpeg', '-quality', '92', *args, '-outfile', os.path.join(OUT, name + '.jpg'), ppm)
        run('cjpeg', '-quality', '90', '-outfile', os.path.join(OUT, 'jpeg_gray.jpg'), pgm)
        # DC (Ah = Al = 0) and one full AC scan per component: the test repeats the DC scan.
        scans = os.path.join(tmp, 'scans.txt')
        with open(scans, 'w') as f:
            f.write('0,1,2: 0-0, 0, 0;\n0: 1-63, 0, 0;\n1: 1-63, 0, 0;\n2: 1-63, 0, 0;\n')
        run('jpegtran', '-scans', scans, '-outfile', os.path.join(OUT, 'jpeg_progressive_4scans.jpg'),
            os.path.join(OUT, 'jpeg_444.jpg'))
        run('cjpeg', '-quality', '90', '-progressive', '-outfile', os.path.join(OUT, 'jpeg_gray_progressive.jpg'), pgm)
    cmyk = np.concatenate([255 - rgb, rng.randint(0, 120, (H, W, 1)).astype(np.uint8)], -1)
    Image.fromarray(cmyk, 'CMYK').save(os.path.join(OUT, 'jpeg_cmyk.jpg'), quality=92)
    Image.fromarray(cmyk, 'CMYK').save(os.path.join(OUT, 'jpeg_cmyk_progressive.jpg'), quality=92, progressive=True)

    for k in range(1, 9):
        tiff = tiff_orientation(k, big_endian=(k % 2 == 0))
        Image.fromarray(rgb).save(os.path.join(OUT, 'orient%d.jpg' % k), quality=90, exif=b'Exif\0\0' + tiff)
    tiff6 = tiff_orientation(6)
    with open(os.path.join(OUT, 'orient6.png'), 'wb') as f:
        f.write(png_bytes(rgb, 2, 8, exif=tiff6))
    Image.fromarray(rgb).save(os.path.join(OUT, 'orient6.webp'), lossless=True, exif=b'Exif\0\0' + tiff6)

    g = rgb[:, :, 1:2].astype(np.int64)
    g16 = g * 257 + rng.randint(0, 257, g.shape)
    rgb16 = rgb.astype(np.int64) * 257 + rng.randint(0, 257, rgb.shape)
    alpha = rng.randint(0, 256, (H, W, 1))
    pal = rng.randint(0, 256, (16, 3))
    idx = rng.randint(0, 16, (H, W, 1))
    pngs = {
        'png_gray1': (g >> 7, 0, 1, {}), 'png_gray2': (g >> 6, 0, 2, {}), 'png_gray4': (g >> 4, 0, 4, {}),
        'png_gray8': (g, 0, 8, {}), 'png_gray16': (g16, 0, 16, {}), 'png_rgb8': (rgb, 2, 8, {}),
        'png_rgb16': (rgb16, 2, 16, {}), 'png_gray_alpha8': (np.concatenate([g, alpha], -1), 4, 8, {}),
        'png_gray_alpha16': (np.concatenate([g16, alpha * 257], -1), 4, 16, {}),
        'png_rgba8': (np.concatenate([rgb, alpha], -1), 6, 8, {}),
        'png_rgba16': (np.concatenate([rgb16, alpha * 257], -1), 6, 16, {}),
        'png_palette4': (idx, 3, 4, {'plte': pal}), 'png_palette8': (idx, 3, 8, {'plte': pal}),
        'png_palette_trns': (idx, 3, 8, {'plte': pal, 'trns': bytes(range(0, 160, 10))}),
        'png_gray_trns': (g, 0, 8, {'trns': struct.pack('>H', int(g[0, 0, 0]))}),
        'png_rgb_trns16': (rgb16, 2, 16, {'trns': struct.pack('>HHH', *[int(v) for v in rgb16[0, 0]])}),
        'png_interlaced_rgb8': (rgb, 2, 8, {'interlace': True}),
        'png_interlaced_gray2': (g >> 6, 0, 2, {'interlace': True}),
        'png_interlaced_rgba16': (np.concatenate([rgb16, alpha * 257], -1), 6, 16, {'interlace': True}),
    }
    for name, (samples, ct, depth, kw) in pngs.items():
        with open(os.path.join(OUT, name + '.png'), 'wb') as f:
            f.write(png_bytes(samples, ct, depth, **kw))

    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    cv2.imwrite(os.path.join(OUT, 'webp_lossy.webp'), bgr, [cv2.IMWRITE_WEBP_QUALITY, 80])
    # What cv2.imwrite writes for the pixels of png_rgb8.png, byte for byte the encoder's target.
    cv2.imwrite(os.path.join(OUT, 'cv2_imwrite_q95.jpg'), bgr)
    cv2.imwrite(os.path.join(OUT, 'cv2_imwrite_q70.jpg'), bgr, [cv2.IMWRITE_JPEG_QUALITY, 70])
    cv2.imwrite(os.path.join(OUT, 'webp_lossless.webp'), bgr)
    rgba = np.concatenate([rgb, alpha.astype(np.uint8)], -1)
    Image.fromarray(rgba, 'RGBA').save(os.path.join(OUT, 'webp_lossy_alpha.webp'), quality=80)
    Image.fromarray(rgba, 'RGBA').save(os.path.join(OUT, 'webp_lossless_alpha.webp'), lossless=True)

    for f in sorted(os.listdir(OUT)):
        if f.endswith(('.jpg', '.png', '.webp')):
            p = os.path.join(OUT, f)
            img = cv2.imread(p, cv2.IMREAD_COLOR)
            assert img is not None, f
            np.save(p + '.bgr.npy', img)
            if f.startswith('orient'):
                np.save(p + '.raw.npy', cv2.imread(p, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION))
    shared = {}
    for f in sorted(os.listdir(SHARED)):
        img = cv2.imread(os.path.join(SHARED, f), cv2.IMREAD_COLOR)
        shared[f] = {'height': img.shape[0], 'width': img.shape[1], 'crc32': zlib.crc32(img.tobytes()) & 0xffffffff}
    with open(os.path.join(OUT, 'shared.json'), 'w') as f:
        json.dump(shared, f, indent=1, sort_keys=True)
    print('wrote', OUT)


if __name__ == '__main__':
    main()
