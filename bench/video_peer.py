#!/usr/bin/python3
"""`gpen video` against the official GPEN flow run frame by frame, in one invocation, on the CPU.

The clip: a slow pan over a photo with several faces (default kids_1024x768.jpg of ../shared/images:
8 faces in each 640x480 frame), made by the ffmpeg program, 640x480, --seconds at --fps (H.264).
Both sides get the same synthetic GPEN-BFR-256 checkpoint (scripts/make_synthetic_gpen.py, seed 1:
the official 256 layout, channel multiplier 1, narrow 0.5) and the real RetinaFace mobilenet0.25
(../shared/models), and the same thread count:

  engine    `gpen --threads T video -m GPEN.gpw -d RETINA.gpw clip.mp4 -o out.mp4 --report r.json`:
            decode, restore and encode overlapped, the default re-encode (libx264, CRF 18, preset
            medium); frames/s from the report (the pipeline's wall time, models already loaded).
  official  the official photo flow (FaceEnhancement.process, rectangle mask, no SR) re-created in
            tests/reference/pipeline_reference.py (PyTorch eager fp32, torch.set_num_threads(T))
            applied to each frame cv2.VideoCapture reads, each result written by cv2.VideoWriter
            (MPEG-4 part 2, OpenCV's default for .mp4); frames/s over that loop, models already
            loaded. --official-frames N times the first N frames only (every frame is processed
            alone, so its frames/s does not depend on the clip's length; the face count of a slow
            pan barely changes).

Prints one line per side and the ratio; --json FILE writes everything (CPU, versions, load).
Run it on an otherwise idle machine: the figures are wall times. Needs /usr/bin/python3 with
torch, cv2 and numpy, the ffmpeg program and build/gpen.

  bench/video_peer.py [--seconds 2] [--fps 25] [--threads 2] [--official-frames 0]
                      [--photo PATH] [--work DIR] [--gpen build/gpen] [--json FILE]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'reference'))

WIDTH, HEIGHT = 640, 480
# A window of 15/16 of the largest 4:3 region of the photo, swept to both ends and back, across
# every 8 s and down every 12 s, scaled to 640x480.
PAN = ("crop=w='trunc(min(iw\\,ih*4/3)*15/16/2)*2':h='trunc(min(iw\\,ih*4/3)*15/16*3/4/2)*2'"
       ":x='(iw-ow)/2*(1-cos(2*PI*t/8))':y='(ih-oh)/2*(1-cos(2*PI*t/12))',scale=%d:%d" % (WIDTH, HEIGHT))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def cpu_name():
    for line in open('/proc/cpuinfo'):
        if line.startswith('model name'):
            return line.split(':', 1)[1].strip()
    return platform.processor() or '?'


def make_inputs(a):
    os.makedirs(a.work, exist_ok=True)
    clip = os.path.join(a.work, 'pan_%dx%d_%gs_%gfps.mp4' % (WIDTH, HEIGHT, a.seconds, a.fps))
    settings = '%s %s %g %g %s' % (os.path.abspath(a.photo), PAN, a.seconds, a.fps,
                                   run(['ffmpeg', '-version']).stdout.splitlines()[0])
    if not os.path.exists(clip) or open(clip + '.settings').read() != settings:
        run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-loop', '1', '-framerate', str(a.fps), '-i', a.photo,
             '-vf', PAN, '-t', str(a.seconds), '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p',
             clip + '.tmp.mp4'])
        os.replace(clip + '.tmp.mp4', clip)
        with open(clip + '.settings', 'w') as f:
            f.write(settings)
    pth = os.path.join(a.work, 'gpen256_synthetic_seed1.pth')
    gpw = pth[:-4] + '.gpw'
    if not os.path.exists(pth):
        run(['/usr/bin/python3', os.path.join(ROOT, 'scripts', 'make_synthetic_gpen.py'), pth, '--size', '256'])
    if not os.path.exists(gpw):
        run([a.gpen, 'convert', pth, '-o', gpw])
    det_pth = os.path.join(a.shared, 'models', 'retinaface-mobilenet0.25.pth')
    det_gpw = os.path.join(a.work, 'retinaface-mobilenet0.25.gpw')
    if not os.path.exists(det_gpw):
        run([a.gpen, 'convert', det_pth, '-o', det_gpw])
    return clip, pth, gpw, det_pth, det_gpw


def engine(a, clip, gpw, det_gpw):
    out = os.path.join(a.work, 'engine_out.mp4')
    rep = os.path.join(a.work, 'engine_report.json')
    cmd = [a.gpen, '--threads', str(a.threads), 'video', '-m', gpw, '-d', det_gpw, clip, '-o', out, '--report', rep,
           '--quiet']
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    run(cmd)
    process_s = time.perf_counter() - t0
    v = json.load(open(rep))['videos'][0]
    return {'command': ' '.join(cmd), 'frames': v['frames'], 'faces': v['faces'], 'fps': v['fps'],
            'wall_s': v['times_s']['wall'], 'process_wall_s': process_s, 'times_s': v['times_s'],
            'peak_rss_mib': v['peak_rss_mib'], 'encoder': v['encoding'].get('encoder'), 'load_before': load}


def official(a, clip, pth, det_pth):
    import cv2
    import torch
    import gpen_reference as gref
    import pipeline_reference as pref
    import retinaface_reference as rref

    torch.set_num_threads(a.threads)
    model = gref.load(pth)
    net = rref.load(det_pth)
    out = os.path.join(a.work, 'official_out.mp4')
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    cap = cv2.VideoCapture(clip, cv2.CAP_FFMPEG)
    fps = cap.get(cv2.CAP_PROP_FPS)
    writer = cv2.VideoWriter(out, cv2.VideoWriter_fourcc(*'mp4v'), fps, (WIDTH, HEIGHT))
    frames = faces = 0
    while a.official_frames <= 0 or frames < a.official_frames:
        ok, img = cap.read()
        if not ok:
            break
        r = pref.process(img, model, net)
        writer.write(r['composite'])
        frames += 1
        faces += len(r['used'])
    writer.release()
    cap.release()
    wall = time.perf_counter() - t0
    return {'frames': frames, 'faces': faces, 'fps': frames / wall, 'wall_s': wall, 'load_before': load,
            'torch': torch.__version__, 'torch_threads': torch.get_num_threads(), 'opencv': cv2.__version__,
            'peak_rss_mib': gref.peak_rss_mb()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seconds', type=float, default=2.0)
    ap.add_argument('--fps', type=float, default=25.0)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--official-frames', type=int, default=0, help='time the official flow on the first N frames (0: all)')
    ap.add_argument('--shared', default=os.environ.get('GPEN_SHARED_DIR', os.path.join(ROOT, '..', 'shared')))
    ap.add_argument('--photo', help='default: SHARED/images/kids_1024x768.jpg')
    ap.add_argument('--work', default='/tmp/gpen_video_peer')
    ap.add_argument('--gpen', default=os.path.join(ROOT, 'build', 'gpen'))
    ap.add_argument('--json', help='write the results here')
    a = ap.parse_args(argv)
    a.photo = a.photo or os.path.join(a.shared, 'images', 'kids_1024x768.jpg')
    clip, pth, gpw, det_pth, det_gpw = make_inputs(a)
    info = {'cpu': cpu_name(), 'cores': os.cpu_count(), 'threads': a.threads,
            'clip': {'photo': os.path.basename(a.photo), 'width': WIDTH, 'height': HEIGHT, 'seconds': a.seconds,
                     'fps': a.fps, 'filter': PAN},
            'gpen': 'GPEN-BFR-256 layout, synthetic weights (scripts/make_synthetic_gpen.py, seed 1)',
            'detector': 'RetinaFace mobilenet0.25 (real weights)',
            'version': run([a.gpen, '--version']).stdout.strip().splitlines()[0]}
    print('clip %dx%d, %g s at %g fps, a pan over %s; %s; %s; %d threads; CPU: %s (%d cores)'
          % (WIDTH, HEIGHT, a.seconds, a.fps, info['clip']['photo'], info['gpen'], info['detector'], a.threads,
             info['cpu'], info['cores']), flush=True)
    e = engine(a, clip, gpw, det_gpw)
    print('gpen video          %4d frames, %5d faces, %7.3f frames/s (%.1f s; process %.1f s; peak RSS %.0f MiB)'
          % (e['frames'], e['faces'], e['fps'], e['wall_s'], e['process_wall_s'], e['peak_rss_mib']), flush=True)
    o = official(a, clip, pth, det_pth)
    print('official per frame  %4d frames, %5d faces, %7.3f frames/s (%.1f s; torch %s, %d threads)'
          % (o['frames'], o['faces'], o['fps'], o['wall_s'], o['torch'], o['torch_threads']), flush=True)
    ratio = e['fps'] / o['fps']
    print('ratio: %.1fx the official frames/s' % ratio)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, 'w') as f:
            json.dump(dict(info, engine=e, official=o, ratio=ratio), f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
