#!/usr/bin/python3
"""Fixtures for tests/test_pipeline.cpp: the official photo pipeline (pipeline_reference.py) run on
../shared/images/solvay_1927.png with the real RetinaFace mobilenet0.25 weights and a synthetic
GPEN-BFR-256 checkpoint (scripts/make_synthetic_gpen.py, seed 1: official layout, seeded random
weights; not committed, 75 MB).

  /usr/bin/python3 tests/reference/make_pipeline_fixtures.py            # ~75 s of CPU, 1 thread
  /usr/bin/python3 tests/reference/make_pipeline_fixtures.py --fingerprint X.pth
        prints the checkpoint fingerprint the test compares with manifest.json

Before anything else the script generates the checkpoint twice, in two separate processes, exactly
as the C++ test does, and checks that both are identical (torch.Generator().manual_seed on the
CPU is deterministic); the fingerprint (SHA-256 over names, shapes and float32 bytes in state-dict
order) goes into the manifest, so a test that regenerates the checkpoint with another torch build
can tell that its weights differ instead of reporting a pipeline mismatch.

Writes tests/fixtures/pipeline/:
  solvay_composite.png           the composite, alpha 1 (the official default)
  solvay_composite_alpha0.5.png  the same faces pasted with alpha 0.5 (GPEN is not rerun: the
                                 restored faces of the first run are blended with their crops)
  solvay_detections.json         detections (box, softmax score, landmarks x1, y1, ..., x5, y5) in
                                 NMS order; per restored face its detection index, whether it was
                                 smoothed, the official tfm / tfm_inv, and the mean of the GPEN
                                 output (uint8 BGR, before smoothing) to localise a mismatch
  manifest.json                  generator, commands, versions, fingerprint, figures
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpen_reference as gref  # noqa: E402
import pipeline_reference as pref  # noqa: E402
import retinaface_reference as rref  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, '..', '..'))
OUT = os.path.join(ROOT, 'tests', 'fixtures', 'pipeline')
PHOTO = os.path.join(rref.SHARED, 'images', 'solvay_1927.png')
MAKE_SYNTHETIC = os.path.join(ROOT, 'scripts', 'make_synthetic_gpen.py')
SIZE, SEED = 256, 1
ALPHAS = (1.0, 0.5)


def fingerprint(path):
    sd = gref.load_state_dict_file(path)
    h = hashlib.sha256()
    for name, t in sd.items():
        a = t.detach().to(torch.float32).contiguous().numpy()
        h.update(name.encode() + b'\0' + repr(tuple(a.shape)).encode() + b'\0')
        h.update(a.tobytes())
    return h.hexdigest()


def make_checkpoint(path):
    subprocess.run([sys.executable, MAKE_SYNTHETIC, path, '--size', str(SIZE), '--seed', str(SEED)],
                   check=True, stdout=subprocess.DEVNULL)


def imwrite(path, img):
    assert cv2.imwrite(path, img, [cv2.IMWRITE_PNG_COMPRESSION, 9]), path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--fingerprint', metavar='PTH')
    ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()
    if a.fingerprint:
        print(fingerprint(a.fingerprint))
        return 0
    torch.set_num_threads(a.threads)
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # same base name: torch.save names the zip's top folder after the file
        os.makedirs(os.path.join(tmp, 'a'))
        os.makedirs(os.path.join(tmp, 'b'))
        p1, p2 = os.path.join(tmp, 'a', 'gpen.pth'), os.path.join(tmp, 'b', 'gpen.pth')
        make_checkpoint(p1)
        make_checkpoint(p2)
        fp = fingerprint(p1)
        assert fp == fingerprint(p2), 'make_synthetic_gpen.py is not deterministic'
        with open(p1, 'rb') as f1, open(p2, 'rb') as f2:
            same_bytes = f1.read() == f2.read()
        model = gref.load(p1)
    net = rref.load(rref.MNET_WEIGHTS)
    img = cv2.imread(PHOTO, cv2.IMREAD_COLOR)       # the official main() reads with IMREAD_COLOR
    dets, lms, faces, ss = pref.detect(net, img)
    runs = {}
    runs[1.0] = pref.process(img, model, net, 1.0, dets, lms)
    restored = runs[1.0]['restored']
    runs[0.5] = pref.process(img, model, net, 0.5, dets, lms, restore=lambda crop, k: restored[k])
    imwrite(os.path.join(OUT, 'solvay_composite.png'), runs[1.0]['composite'])
    imwrite(os.path.join(OUT, 'solvay_composite_alpha0.5.png'), runs[0.5]['composite'])

    r = runs[1.0]
    rec = pref.describe(img, faces, ss, r, 1.0, SIZE)
    for k, face in enumerate(rec['restored']):
        face['restored_mean_bgr'] = [float(v) for v in restored[k].reshape(-1, 3).mean(axis=0)]
    with open(os.path.join(OUT, 'solvay_detections.json'), 'w') as f:
        json.dump(rec, f, indent=1)

    changed = (r['composite'] != img).any(axis=2)
    manifest = {
        'generator': 'tests/reference/make_pipeline_fixtures.py',
        'photo': '../shared/images/solvay_1927.png (cv2.IMREAD_COLOR: alpha dropped)',
        'detector': '../shared/models/retinaface-mobilenet0.25.pth',
        'checkpoint': {
            'command': '/usr/bin/python3 scripts/make_synthetic_gpen.py OUT.pth --size %d --seed %d' % (SIZE, SEED),
            'layout': 'GPEN-BFR-256 (size 256, channel_multiplier 1, narrow 0.5, style_dim 512)',
            'fingerprint_sha256': fp,
            'fingerprint_command': '/usr/bin/python3 tests/reference/make_pipeline_fixtures.py --fingerprint OUT.pth',
            'two_processes_identical_tensors': True,
            'two_processes_identical_file_bytes': bool(same_bytes),
        },
        'versions': {'torch': torch.__version__, 'numpy': np.__version__, 'cv2': cv2.__version__},
        'torch_threads': a.threads,
        'image_size': [int(img.shape[1]), int(img.shape[0])],
        'detect_ss': ss,
        'faces_detected': len(faces),
        'faces_restored': len(r['used']),
        'faces_smoothed': int(sum(r['smoothed'])),
        'alphas': {'solvay_composite.png': 1.0, 'solvay_composite_alpha0.5.png': 0.5},
        'pixels_changed_alpha1': int(changed.sum()),
        'full_mask_max': float(r['full_mask'].max()),
        'full_mask_min': float(r['full_mask'].min()),
    }
    with open(os.path.join(OUT, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print('wrote %s: %d faces, %d restored (%d smoothed), %d bytes' %
          (OUT, len(faces), len(r['used']), int(sum(r['smoothed'])), total))
    return 0


if __name__ == '__main__':
    sys.exit(main())
