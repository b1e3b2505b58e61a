"""Restore a folder of photos on a Ray cluster with Ray Data (docs/serving.md).

    python3 -m gpen_engine.ray_restore IN_DIR OUT_DIR --model GPEN.gpw --detector RETINAFACE.gpw [--address ADDR]

Files are read as bytes by the actors (the originals are never written), restored by a pool of actors that
each hold one engine instance, and written atomically under OUT_DIR with the names
`gpen restore IN_DIR -o OUT_DIR` gives them. On a GPU each actor asks Ray for the share of the
device its planned footprint takes (num_gpus = planned bytes / device memory), so Ray packs as many
engines on a GPU as fit. A file that cannot be decoded or restored is reported and skipped; the
summary says how many, and the exit status is 1 when any failed.
"""
import argparse
import json
import os
import sys
import time

from . import Restorer, imdecode, imwrite, is_image_name, output_name
from . import _budget


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m gpen_engine.ray_restore", description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="folder of photos (recursive; .jpg .jpeg .png .webp .bmp)")
    ap.add_argument("output", help="folder for the restored photos (mirrors the input's tree)")
    ap.add_argument("--model", required=True, help="converted GPEN model (.gpw)")
    ap.add_argument("--detector", required=True, help="converted RetinaFace model (.gpw)")
    ap.add_argument("--address", default=None, help="Ray cluster to join (default: a local one)")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local cluster (without --address)")
    ap.add_argument("--actors", type=int, default=None, help="engine actors (default: CPUs / --cpus-per-actor, or as many as the GPUs hold)")
    ap.add_argument("--cpus-per-actor", type=int, default=1, help="CPUs (OpenMP threads) per actor")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default=None)
    ap.add_argument("--jpeg-quality", type=int, default=95, help="quality of .jpg outputs, as gpen restore")
    ap.add_argument("--report", default=None, help="write the per-file results and the summary as JSON here")
    return ap.parse_args(argv)


def collect(in_dir, out_dir):
    """(input path, output path) pairs, in the order and with the names of `gpen restore`."""
    jobs = []
    for d, _, files in os.walk(in_dir):
        for f in files:
            p = os.path.join(d, f)
            if is_image_name(p) and os.path.isfile(p):
                rel = os.path.relpath(p, in_dir)
                jobs.append((p, os.path.join(out_dir, output_name(rel))))
    jobs.sort()
    ins = {os.path.realpath(i) for i, _ in jobs}
    for _, o in jobs:
        if os.path.realpath(o) in ins:
            raise SystemExit(f"gpen_engine.ray_restore: {o}: refusing to overwrite an input")
    return jobs


class RestoreActor:
    """One engine instance; Ray keeps it alive across batches, so the model loads once."""

    def __init__(self, model, detector, device, precision, threads, quality, outputs):
        self.restorer = Restorer(model, detector, device=device, precision=precision, threads=threads)
        self.quality = quality
        self.outputs = outputs

    def __call__(self, batch):
        res = {"path": [], "output": [], "faces": [], "error": [], "ms": []}
        for path in batch["path"]:
            path = str(path)
            t0 = time.time()
            out, faces, err = self.outputs.get(path, ""), -1, ""
            try:
                with open(path, "rb") as f:  # read as bytes: the original is never opened for writing
                    data = f.read()
                img, meta = imdecode(data, path, meta=True)
                composite, found = self.restorer.restore(img)
                os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
                imwrite(out, composite, quality=self.quality, meta=meta)  # temporary file, then rename
                faces = len(found)
            except Exception as e:  # noqa: BLE001 - reported per file, the run goes on
                err = str(e) or type(e).__name__
            res["path"].append(path)
            res["output"].append(out)
            res["faces"].append(faces)
            res["error"].append(err)
            res["ms"].append((time.time() - t0) * 1000.0)
        return res


def main(argv=None):
    a = parse_args(argv)
    if not os.path.isdir(a.input):
        raise SystemExit(f"gpen_engine.ray_restore: {a.input}: not a folder")
    jobs = collect(a.input, a.output)
    if not jobs:
        raise SystemExit(f"gpen_engine.ray_restore: {a.input}: no images (.jpg .jpeg .png .webp .bmp)")
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
    actors = a.actors or max(1, min(len(jobs), cpus // a.cpus_per_actor))
    if num_gpus > 0 and not a.actors:
        per_gpu = int(1.0 // num_gpus)
        actors = max(1, min(len(jobs), per_gpu * int(ray.cluster_resources().get("GPU", 0))))
    outputs = {os.path.abspath(i): o for i, o in jobs}
    # The paths as the dataset, the actors reading each file: with every CPU held by an actor, a
    # separate read stage would have no CPU left to run on.
    ds = ray.data.from_items([{"path": os.path.abspath(i)} for i, _ in jobs], override_num_blocks=len(jobs))
    # The class by its module's name, not __main__'s (python3 -m runs this file as __main__): Ray
    # then pickles a reference to it instead of the class and its (unpicklable) engine functions.
    from gpen_engine.ray_restore import RestoreActor as actor_class
    done = ds.map_batches(actor_class, batch_size=1, compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=a.cpus_per_actor,
                          num_gpus=num_gpus if num_gpus > 0 else None,
                          fn_constructor_kwargs=dict(model=os.path.abspath(a.model),
                                                     detector=os.path.abspath(a.detector), device=a.device,
                                                     precision=a.precision, threads=a.cpus_per_actor,
                                                     quality=a.jpeg_quality, outputs=outputs))
    rows = sorted(done.take_all(), key=lambda r: r["path"])
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print(f"gpen_engine.ray_restore: error: {r['path']}: {r['error']}", file=sys.stderr)
    summary = {"images": len(jobs), "restored": len(rows) - len(failed), "failed": len(failed),
               "faces": sum(max(0, int(r["faces"])) for r in rows), "actors": actors,
               "cpus_per_actor": a.cpus_per_actor, "num_gpus_per_actor": num_gpus,
               "planned_bytes_per_actor": ip["per_instance_bytes"], "seconds": round(time.time() - t0, 3)}
    print(json.dumps(summary), flush=True)
    if a.report:
        tmp = a.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"files": [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows],
                       "summary": summary}, f, indent=2)
        os.replace(tmp, a.report)
    ray.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
