#!/usr/bin/python3
"""Generate the RetinaFace fixtures under tests/fixtures/retinaface/.

Committed (small), all from the REAL mobilenet0.25 weights in ../shared/models:
  detections_mnet_<image stem>.json   reference detections for every ../shared/images file
  mnet_small/                         a 160x120 image (kids_1024x768.jpg through
                                      cv2.resize INTER_AREA), its layer-by-layer activations
                                      (NCHW .npy) and detections, incl. pre-NMS candidates
  manifest.json                       every file, shape, meaning, stats, float64 distance

Not committed (ResNet-50 weights are ~105 MB): `--r50 DIR` writes a random-weight
ResNet-50 RetinaFace checkpoint (seeded, BN statistics calibrated on a larger view
of the same photo),
a 48x64 input and its layer-by-layer activations into DIR for a test to compare against;
the committed manifest only records the command and the statistics to expect.

Usage:
  /usr/bin/python3 tests/reference/make_retinaface_fixtures.py            # committed fixtures
  /usr/bin/python3 tests/reference/make_retinaface_fixtures.py --r50 /tmp/rf_r50
"""
import argparse
import glob
import json
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import retinaface_reference as R  # noqa: E402

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
SMALL_SOURCE = 'kids_1024x768.jpg'
SMALL_W, SMALL_H = 160, 120
R50_SEED, R50_H, R50_W = 2024, 48, 64
DETECT_PARAMS = {'conf_thresh': 0.9, 'nms_thresh': 0.4, 'top_k': 5000, 'keep_top_k': 750,
                 'max_side': 1500, 'target_side': 1000}


def describe(key):
    fixed = {
        'input_bgr_u8': 'source image, HWC uint8 BGR',
        'input': 'network input: float32(image) - (104,117,123), NCHW, BGR channel order',
        'loc': 'box regressions of all priors, (N, P, 4), prior order (level, y, x, anchor)',
        'conf_logits': 'class logits (N, P, 2) before softmax',
        'conf': 'softmax(conf_logits) (N, P, 2); [..., 1] is the face score',
        'landms': 'landmark regressions (N, P, 10)',
        'priors': 'priors (P, 4) = (cx, cy, sx, sy) normalised by the input width/height',
        'boxes_decoded': 'decoded boxes of all priors in input pixels (P, 4) x1,y1,x2,y2',
        'landms_decoded': 'decoded landmarks of all priors in input pixels (P, 10) x1,y1,...,x5,y5',
        'candidates': 'rows (x1,y1,x2,y2,score) with score > threshold, sorted descending: the NMS input',
    }
    if key in fixed:
        return fixed[key]
    if key.startswith('body.stage'):
        return 'mobilenet backbone block %s output (after its last BN + leaky 0.1), NCHW' % key[5:]
    if key.startswith('body.layer') or key == 'body.stem':
        return 'ResNet-50 %s output, NCHW' % key[5:]
    if key.startswith('body.out'):
        return 'backbone feature %s (stride %d), FPN input, NCHW' % (key[-1], 4 << int(key[-1]))
    if key.startswith('fpn.output'):
        return 'FPN lateral %s: conv1x1+BN+act of backbone feature %s, before the top-down add' % (key[-1], key[-1])
    if key.startswith('fpn.out'):
        return 'FPN output %s (after merge for 1 and 2), SSH input, NCHW' % key[-1]
    if key.startswith('ssh'):
        return 'SSH %s output (relu of the concat), NCHW' % key[-1]
    if key.startswith('head.'):
        return '%s head conv output of level %s, NCHW (A*k channels, anchor-major)' % (key[5:-1], key[-1])
    return key


def tensor_entry(d, sub, key, arr, ref64=None):
    fn = key.replace('.', '_') + '.npy'
    np.save(os.path.join(d, fn), arr)
    e = {'file': '%s/%s' % (sub, fn) if sub else fn, 'name': key, 'shape': list(arr.shape),
         'dtype': str(arr.dtype), 'desc': describe(key)}
    if arr.dtype == np.float32:
        e['stats'] = {'min': float(arr.min()), 'max': float(arr.max()), 'mean': float(arr.mean()),
                      'std': float(arr.std())}
        if ref64 is not None:
            e['f64_maxabs_diff'] = float(np.abs(ref64 - arr).max())
    return e


def as_np(t):
    return t.detach().numpy() if torch.is_tensor(t) else np.asarray(t)


def trace_model(net, x):
    tr, tr64 = {}, {}
    with torch.no_grad():
        net(x, tr)
        net.double()(x.double(), tr64)
        net.float()
    return tr, tr64


def small_fixture(net, outdir):
    import cv2
    sub = 'mnet_small'
    d = os.path.join(outdir, sub)
    os.makedirs(d, exist_ok=True)
    src = R.read_bgr(os.path.join(R.SHARED, 'images', SMALL_SOURCE))
    img = cv2.resize(src, (SMALL_W, SMALL_H), interpolation=cv2.INTER_AREA)
    files = [tensor_entry(d, sub, 'input_bgr_u8', img)]
    x, ss = R.net_input(img)
    assert ss == 1.0
    files.append(tensor_entry(d, sub, 'input', x.numpy()))
    tr, tr64 = trace_model(net, x)
    # body.outK duplicate the last block of each stage; record them as aliases only
    aliases = {'body.out1': 'body.stage1.5', 'body.out2': 'body.stage2.5', 'body.out3': 'body.stage3.1'}
    for key, t in tr.items():
        if key in aliases:
            continue
        files.append(tensor_entry(d, sub, key, as_np(t).astype(np.float32), as_np(tr64[key])))
    ptr = {}
    faces = R.postprocess(tr['loc'][0], tr['conf'][0], tr['landms'][0], SMALL_H, SMALL_W, 1.0,
                          DETECT_PARAMS['conf_thresh'], DETECT_PARAMS['nms_thresh'],
                          DETECT_PARAMS['top_k'], DETECT_PARAMS['keep_top_k'], trace=ptr)
    for key in ('priors', 'boxes_decoded', 'landms_decoded', 'candidates'):
        files.append(tensor_entry(d, sub, key, as_np(ptr[key]).astype(np.float32)))
    det = {'image': 'mnet_small/input_bgr_u8.npy', 'width': SMALL_W, 'height': SMALL_H,
           'net_input': [SMALL_W, SMALL_H], 'faces': faces}
    with open(os.path.join(d, 'detections.json'), 'w') as f:
        json.dump(det, f, indent=1)
    files.append({'file': 'mnet_small/detections.json', 'desc': 'final detections of the small image'})
    assert len(faces) >= 3 and len(ptr['candidates']) > len(faces), 'small image must exercise NMS'
    return {'source': '%s -> cv2.resize to %dx%d INTER_AREA' % (SMALL_SOURCE, SMALL_W, SMALL_H),
            'aliases': aliases, 'faces': len(faces), 'candidates': int(len(ptr['candidates'])),
            'files': files}


def r50_fixture(outdir):
    """Random ResNet-50 RetinaFace, layer by layer, into outdir (not committed)."""
    import cv2
    os.makedirs(outdir, exist_ok=True)
    src = R.read_bgr(os.path.join(R.SHARED, 'images', SMALL_SOURCE))
    img = cv2.resize(src, (R50_W, R50_H), interpolation=cv2.INTER_AREA)
    x, _ = R.net_input(img)
    # BN statistics from a larger view of the same photo: with the test input itself, a
    # BN over the 4 positions of layer4 would subtract a mean equal to the data and turn
    # rounding noise into signal (float64 and float32 runs would differ by 0.1)
    calib, _ = R.net_input(cv2.resize(src, (4 * R50_W, 4 * R50_H), interpolation=cv2.INTER_AREA))
    sd = R.random_state_dict('resnet50', R50_SEED, calibrate_input=calib)
    ckpt = os.path.join(outdir, 'checkpoint.pth')
    torch.save(sd, ckpt)
    net = R.load(ckpt)
    files = [tensor_entry(outdir, '', 'input_bgr_u8', img), tensor_entry(outdir, '', 'input', x.numpy())]
    tr, tr64 = trace_model(net, x)
    for key, t in tr.items():
        if key in ('body.out1', 'body.out2', 'body.out3'):
            continue                     # = body.layer2..4
        files.append(tensor_entry(outdir, '', key, as_np(t).astype(np.float32), as_np(tr64[key])))
    conf = as_np(tr['conf'])[0, :, 1]
    summary = {'checkpoint': 'checkpoint.pth', 'seed': R50_SEED, 'input_hw': [R50_H, R50_W],
               'aliases': {'body.out1': 'body.layer2', 'body.out2': 'body.layer3', 'body.out3': 'body.layer4'},
               'face_score_max': float(conf.max()), 'face_score_mean': float(conf.mean()),
               'files': files}
    with open(os.path.join(outdir, 'manifest.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    for e in files:
        if 'stats' in e:
            assert e['stats']['std'] > 1e-4 and np.isfinite(e['stats']['max']), (e['name'], e['stats'])
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.path.join(REPO, 'tests', 'fixtures', 'retinaface'))
    ap.add_argument('--r50', metavar='DIR', help='only write the random ResNet-50 fixture into DIR')
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.r50:
        s = r50_fixture(a.r50)
        print('wrote %s: %d files, face score max %.4f' % (a.r50, len(s['files']), s['face_score_max']))
        return
    net = R.load(R.MNET_WEIGHTS)
    shutil.rmtree(os.path.join(a.out, 'mnet_small'), ignore_errors=True)
    for old in glob.glob(os.path.join(a.out, 'detections_mnet_*.json')):
        os.remove(old)
    os.makedirs(a.out, exist_ok=True)
    counts, det_files = {}, []
    for path in sorted(glob.glob(os.path.join(R.SHARED, 'images', '*'))):
        if not path.lower().endswith(('.png', '.jpg', '.jpeg')):
            continue
        r = R.detect_json(net, path, **DETECT_PARAMS)
        stem = os.path.splitext(os.path.basename(path))[0]
        fn = 'detections_mnet_%s.json' % stem
        with open(os.path.join(a.out, fn), 'w') as f:
            json.dump(r, f, indent=1)
        counts[r['image']] = len(r['faces'])
        det_files.append({'file': fn, 'image': '../shared/images/' + r['image'], 'faces': len(r['faces']),
                          'net_input': r['net_input']})
    assert counts.get('solvay_1927.png') == 29, counts
    small = small_fixture(net, a.out)
    r50_dir = '/tmp/gpen_rf_r50_fixture'
    r50 = r50_fixture(r50_dir)
    manifest = {
        'generator': 'tests/reference/make_retinaface_fixtures.py (reference: tests/reference/retinaface_reference.py)',
        'torch_version': torch.__version__,
        'checkpoint': '../shared/models/retinaface-mobilenet0.25.pth',
        'detect_params': DETECT_PARAMS,
        'detections_format': 'JSON {image, width, height, net_input [w,h] after the >1500 shrink, faces: '
                             '[{box [x1,y1,x2,y2], score, landmarks [x1,y1,...,x5,y5]}]} in original image '
                             'pixels, in NMS output order (score descending). Landmark order: left eye, right '
                             'eye, nose, left mouth, right mouth. score = softmax face probability.',
        'conventions': 'Activations NCHW float32; trace key dots become underscores in file names. '
                       'f64_maxabs_diff = |float64 reference - float32 tensor|, a scale for tolerances.',
        'detections': det_files,
        'mnet_small': small,
        'r50_random': {
            'committed': False,
            'regenerate': '/usr/bin/python3 tests/reference/make_retinaface_fixtures.py --r50 DIR',
            'seed': r50['seed'], 'input_hw': r50['input_hw'],
            'note': 'writes DIR/checkpoint.pth (~105 MB, zip format), DIR/*.npy and DIR/manifest.json; '
                    'expected statistics below (they come out identical on the same torch build)',
            'face_score_max': r50['face_score_max'], 'face_score_mean': r50['face_score_mean'],
            'tensors': [{k: e[k] for k in ('name', 'shape', 'stats') if k in e} for e in r50['files']],
        },
    }
    with open(os.path.join(a.out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(r50_dir, ignore_errors=True)
    total = 0
    for root, _, fs in os.walk(a.out):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in fs)
    print('face counts:', json.dumps(counts))
    print('small image: %d faces from %d candidates' % (small['faces'], small['candidates']))
    print('wrote %s (%d bytes)' % (a.out, total))
    assert total < 3 * 1000 * 1000, 'fixtures exceed 3 MB'


if __name__ == '__main__':
    main()
