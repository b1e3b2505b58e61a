#!/usr/bin/python3
"""Fixture for the JPEG case of tests/test_pipeline.cpp: the official photo pipeline
(pipeline_reference.py) on ../shared/images/kids_1024x768.jpg, read with cv2.imread(IMREAD_COLOR)
as the official main() does, with the same detector and synthetic GPEN-BFR-256 checkpoint as
make_pipeline_fixtures.py (whose manifest holds the checkpoint's fingerprint).

  /usr/bin/python3 tests/reference/make_pipeline_jpeg_fixture.py     # ~30 s of CPU, 1 thread

Writes tests/fixtures/pipeline/kids_composite.png (alpha 1) and kids_detections.json."""
import json
import os
import sys
import tempfile

import cv2
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpen_reference as gref  # noqa: E402
import make_pipeline_fixtures as mpf  # noqa: E402
import pipeline_reference as pref  # noqa: E402
import retinaface_reference as rref  # noqa: E402

PHOTO = os.path.join(rref.SHARED, 'images', 'kids_1024x768.jpg')


def main():
    torch.set_num_threads(1)
    with open(os.path.join(mpf.OUT, 'manifest.json')) as f:
        want = json.load(f)['checkpoint']['fingerprint_sha256']
    with tempfile.TemporaryDirectory() as tmp:
        pth = os.path.join(tmp, 'gpen.pth')
        mpf.make_checkpoint(pth)
        assert mpf.fingerprint(pth) == want, 'synthetic checkpoint differs from the manifest'
        model = gref.load(pth)
    net = rref.load(rref.MNET_WEIGHTS)
    img = cv2.imread(PHOTO, cv2.IMREAD_COLOR)
    dets, lms, faces, ss = pref.detect(net, img)
    r = pref.process(img, model, net, 1.0, dets, lms)
    mpf.imwrite(os.path.join(mpf.OUT, 'kids_composite.png'), r['composite'])
    rec = pref.describe(img, faces, ss, r, 1.0, mpf.SIZE)
    with open(os.path.join(mpf.OUT, 'kids_detections.json'), 'w') as f:
        json.dump(rec, f, indent=1)
    print('wrote kids_composite.png: %d faces, %d restored' % (len(faces), len(r['used'])))


if __name__ == '__main__':
    main()
