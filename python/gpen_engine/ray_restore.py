"""Restore photos and videos on a Ray cluster with Ray Data (docs/serving.md, docs/video.md).

    python3 -m gpen_engine.ray_restore IN OUT --model GPEN.gpw --detector RETINAFACE.gpw [--address ADDR]

IN is a folder (photos and videos, recursively; OUT a folder mirroring it) or one video (OUT the
output file). Files are read by the actors (the originals are never written), restored by a pool of
actors that each hold one engine instance, and written atomically under OUT with the names
`gpen restore` and `gpen video` give them. On a GPU each actor asks Ray for the share of the
device its planned footprint takes (num_gpus = planned bytes / device memory), so Ray packs as many
engines on a GPU as fit.

A video is cut at its keyframes into about as many segments as there are actors (each decodes on
its own to the frames a single run decodes); the actors restore the segments, their timestamps on
the whole video's clock and without the other streams, into temporary files beside the output;
the engine then joins them (libavformat, no re-encoding) and copies the input's audio, subtitles
and other streams as `gpen video` does: the frames and timestamps of a one-process run.

A file that cannot be decoded or restored is reported and skipped; the summary says how many, and
the exit status is 1 when any failed.
"""
import argparse
import json
import os
import shutil
import sys
import time

from . import Restorer, has_video, imdecode, imwrite, is_image_name, is_video_name, output_name
from . import _budget


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m gpen_engine.ray_restore", description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="folder of photos and videos (recursive), or one video")
    ap.add_argument("output", help="folder for the restored files (mirrors the input's tree), or the output video")
    ap.add_argument("--model", required=True, help="converted GPEN model (.gpw)")
    ap.add_argument("--detector", required=True, help="converted RetinaFace model (.gpw)")
    ap.add_argument("--address", default=None, help="Ray cluster to join (default: a local one)")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local cluster (without --address)")
    ap.add_argument("--actors", type=int, default=None, help="engine actors (default: CPUs / --cpus-per-actor, or as many as the GPUs hold)")
    ap.add_argument("--cpus-per-actor", type=int, default=1, help="CPUs (OpenMP threads) per actor")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default=None)
    ap.add_argument("--jpeg-quality", type=int, default=95, help="quality of .jpg outputs, as gpen restore")
    v = ap.add_argument_group("videos (as gpen video)")
    v.add_argument("--codec", default=None, help="encoder (default: the input's codec family)")
    v.add_argument("--pix-fmt", default=None, help="pixel format of the output")
    v.add_argument("--crf", type=int, default=None, help="constant rate factor")
    v.add_argument("--preset", default=None, help="encoder preset")
    v.add_argument("--start", type=float, default=None, help="start at this time, in seconds")
    v.add_argument("--duration", type=float, default=None, help="restore this many seconds")
    v.add_argument("--ignore-orientation", action="store_true", help="frames as stored, not turned upright")
    v.add_argument("--segments", type=int, default=None,
                   help="segments per video, at most (default: one per actor; 1: no cutting)")
    ap.add_argument("--report", default=None, help="write the per-file results and the summary as JSON here")
    return ap.parse_args(argv)


def collect(in_dir, out_dir):
    """(input path, output path) pairs of photos and videos, in the order and with the names of
    `gpen restore` and `gpen video`."""
    jobs = []
    for d, _, files in os.walk(in_dir):
        for f in files:
            p = os.path.join(d, f)
            if (is_image_name(p) or is_video_name(p)) and os.path.isfile(p):
                rel = os.path.relpath(p, in_dir)
                jobs.append((p, os.path.join(out_dir, output_name(rel) if is_image_name(p) else rel)))
    jobs.sort()
    ins = {os.path.realpath(i) for i, _ in jobs}
    for _, o in jobs:
        if os.path.realpath(o) in ins:
            raise SystemExit(f"gpen_engine.ray_restore: {o}: refusing to overwrite an input")
    return jobs


def segments(path, parts, start=None, duration=None):
    """[(start, duration)] of up to `parts` segments of the video's cut [start, start + duration),
    each beginning at a keyframe (the first at the cut's start) and holding about as many keyframe
    intervals as the others; None: from the beginning, to the end."""
    from . import _gpen
    s = start or 0.0
    end = None if duration is None else s + duration
    cuts = [c for c in _gpen.video_keyframe_cuts(path) if c > s and (end is None or c < end)]
    n = max(1, min(parts, len(cuts) + 1))
    bounds = [cuts[round(i * (len(cuts) + 1) / n) - 1] for i in range(1, n)]
    starts = [s] + bounds
    ends = bounds + [end]
    return [(a or None, None if b is None else b - a) for a, b in zip(starts, ends)]


class RestoreActor:
    """One engine instance; Ray keeps it alive across batches, so the model loads once. A row is a
    photo, or a segment of a video (start, duration and the clock of the whole run, run_start)."""

    def __init__(self, model, detector, device, precision, threads, quality, video):
        self.restorer = Restorer(model, detector, device=device, precision=precision, threads=threads)
        self.quality = quality
        self.video = video

    def photo(self, path, out):
        with open(path, "rb") as f:  # read as bytes: the original is never opened for writing
            data = f.read()
        img, meta = imdecode(data, path, meta=True)
        composite, found = self.restorer.restore(img)
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        imwrite(out, composite, quality=self.quality, meta=meta)  # temporary file, then rename
        return len(found), 0

    def segment(self, path, out, start, duration, run_start):
        rep = self.restorer.restore_video(path, out, start=None if start < 0 else start,
                                          duration=None if duration < 0 else duration, run_start=run_start,
                                          other_streams=False, **self.video)
        return int(rep["faces"]), int(rep["frames"])

    def __call__(self, batch):
        res = {"path": [], "output": [], "faces": [], "frames": [], "error": [], "ms": []}
        for i, path in enumerate(batch["path"]):
            path, out = str(path), str(batch["output"][i])
            t0 = time.time()
            faces, frames, err = -1, 0, ""
            try:
                if batch["segment"][i] >= 0:
                    faces, frames = self.segment(path, out, float(batch["start"][i]), float(batch["duration"][i]),
                                                 float(batch["run_start"][i]))
                else:
                    faces, frames = self.photo(path, out)
            except Exception as e:  # noqa: BLE001 - reported per file, the run goes on
                err = str(e) or type(e).__name__
            res["path"].append(path)
            res["output"].append(out)
            res["faces"].append(faces)
            res["frames"].append(frames)
            res["error"].append(err)
            res["ms"].append((time.time() - t0) * 1000.0)
        return res


def video_rows(jobs, a, parts):
    """The rows of the videos' segments, and per video (input, output, temporary folder, segment files);
    a video whose keyframes cannot be read is reported in `failed`."""
    rows, videos, failed = [], [], []
    for src, out in jobs:
        try:
            cut = segments(src, parts, a.start, a.duration)
        except Exception as e:  # noqa: BLE001
            failed.append({"path": src, "output": out, "faces": -1, "frames": 0, "error": str(e), "ms": 0.0})
            continue
        tmp = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.segments-{os.getpid()}")
        os.makedirs(tmp, exist_ok=True)
        ext = os.path.splitext(out)[1]
        files = []
        for k, (start, duration) in enumerate(cut):
            seg = os.path.join(tmp, f"{k:05d}{ext}")
            files.append(seg)
            rows.append({"path": os.path.abspath(src), "output": seg, "segment": k,
                         "start": -1.0 if start is None else start, "duration": -1.0 if duration is None else duration,
                         "run_start": a.start or 0.0})
        videos.append((src, out, tmp, files))
    return rows, videos, failed


def join(videos, rows, a):
    """Each video's segments joined into its output (the engine's libavformat remux, no re-encoding),
    the temporary files removed; one result row per video."""
    from . import _gpen
    by_output = {r["output"]: r for r in rows}
    results = []
    for src, out, tmp, files in videos:
        parts = [by_output.get(f) for f in files]
        err = next(("a segment was not restored" if p is None else p["error"] for p in parts
                    if p is None or p["error"]), "")
        t0 = time.time()
        if not err:
            try:
                _gpen.join_video_segments(src, files, out, start=a.start, duration=a.duration,
                                          ignore_orientation=a.ignore_orientation)
            except Exception as e:  # noqa: BLE001
                err = str(e)
        shutil.rmtree(tmp, ignore_errors=True)
        results.append({"path": os.path.abspath(src), "output": out, "error": err,
                        "faces": -1 if err else sum(int(p["faces"]) for p in parts),
                        "frames": 0 if err else sum(int(p["frames"]) for p in parts),
                        "segments": len(files),
                        "ms": sum(float(p["ms"]) for p in parts if p) + (time.time() - t0) * 1000.0})
    return results


def main(argv=None):
    a = parse_args(argv)
    if os.path.isfile(a.input) and is_video_name(a.input):
        out = os.path.join(a.output, os.path.basename(a.input)) if os.path.isdir(a.output) else a.output
        if os.path.realpath(out) == os.path.realpath(a.input):
            raise SystemExit(f"gpen_engine.ray_restore: {out}: refusing to overwrite an input")
        jobs = [(a.input, out)]
    elif os.path.isdir(a.input):
        jobs = collect(a.input, a.output)
    else:
        raise SystemExit(f"gpen_engine.ray_restore: {a.input}: neither a folder nor a video")
    if not jobs:
        raise SystemExit(f"gpen_engine.ray_restore: {a.input}: no photos or videos")
    photos = [(i, o) for i, o in jobs if is_image_name(i)]
    videos = [(i, o) for i, o in jobs if not is_image_name(i)]
    if videos and not has_video():
        raise SystemExit("gpen_engine.ray_restore: this build of gpen_engine has no video support (GPEN_VIDEO)")
    ip = _budget.instance_plan(a.model, a.detector, a.device, 1, a.precision)
    num_gpus = 0.0
    if a.device == "cuda":
        mem = _budget.gpu_memory()
        if mem is None:
            raise SystemExit("gpen_engine.ray_restore: --device cuda but nvidia-smi reports no GPU")
        num_gpus = _budget.gpu_fraction(ip, mem[1])

    import ray

    t0 = time.time()
    if a.address:
        ray.init(address=a.address, log_to_driver=False)
    else:
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    cpus = int(ray.cluster_resources().get("CPU", 1))
    actors = a.actors or max(1, cpus // a.cpus_per_actor)
    if num_gpus > 0 and not a.actors:
        actors = max(1, int(1.0 // num_gpus) * int(ray.cluster_resources().get("GPU", 0)))
    rows = [{"path": os.path.abspath(i), "output": o, "segment": -1, "start": -1.0, "duration": -1.0,
             "run_start": 0.0} for i, o in photos]
    seg_rows, video_jobs, failed_videos = video_rows(videos, a, a.segments or actors)
    rows += seg_rows
    actors = max(1, min(actors, len(rows)))
    # The actors read each file themselves: with every CPU held by an actor, a separate read stage
    # would have no CPU left to run on.
    done_rows = []
    if rows:
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        # The class by its module's name, not __main__'s (python3 -m runs this file as __main__): Ray
        # then pickles a reference to it instead of the class and its (unpicklable) engine functions.
        from gpen_engine.ray_restore import RestoreActor as actor_class
        video = dict(codec=a.codec, pix_fmt=a.pix_fmt, crf=a.crf, preset=a.preset,
                     ignore_orientation=a.ignore_orientation)
        done = ds.map_batches(actor_class, batch_size=1, compute=ray.data.ActorPoolStrategy(size=actors),
                              num_cpus=a.cpus_per_actor, num_gpus=num_gpus if num_gpus > 0 else None,
                              fn_constructor_kwargs=dict(model=os.path.abspath(a.model),
                                                         detector=os.path.abspath(a.detector), device=a.device,
                                                         precision=a.precision, threads=a.cpus_per_actor,
                                                         quality=a.jpeg_quality, video=video))
        done_rows = [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in done.take_all()]
    segs = {r["output"] for r in seg_rows}
    results = [r for r in done_rows if r["output"] not in segs]
    results += join(video_jobs, [r for r in done_rows if r["output"] in segs], a) + failed_videos
    results.sort(key=lambda r: r["path"])
    failed = [r for r in results if r["error"]]
    for r in failed:
        print(f"gpen_engine.ray_restore: error: {r['path']}: {r['error']}", file=sys.stderr)
    summary = {"images": len(photos), "videos": len(videos), "restored": len(results) - len(failed),
               "failed": len(failed), "faces": sum(max(0, int(r["faces"])) for r in results),
               "frames": sum(int(r.get("frames", 0)) for r in results if "segments" in r),
               "segments": len(seg_rows), "actors": actors, "cpus_per_actor": a.cpus_per_actor,
               "num_gpus_per_actor": num_gpus, "planned_bytes_per_actor": ip["per_instance_bytes"],
               "seconds": round(time.time() - t0, 3)}
    print(json.dumps(summary), flush=True)
    if a.report:
        tmp = a.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": results, "summary": summary}, f, indent=2)
        os.replace(tmp, a.report)
    ray.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
