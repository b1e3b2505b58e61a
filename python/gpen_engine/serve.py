"""Serve gpen_engine on Triton Inference Server through PyTriton (docs/serving.md).

    python3 -m gpen_engine.serve --model GPEN.gpw --detector RETINAFACE.gpw [--instances N|auto]

Model "gpen": input "image" (the encoded photo, bytes), outputs "image" (the restored photo
encoded as --format, EXIF and ICC carried as `gpen restore` does) and "faces" (JSON: box, score,
landmarks per detection). A corrupt or hostile image gets an error response; the server keeps
serving. `--instances auto`: as many engine instances as the memory plan says fit the budget.
Binds to 127.0.0.1 unless --address says otherwise.
"""
import argparse
import json
import logging
import os
import signal
import sys
import threading

import numpy as np

from . import Restorer, __version__, imdecode, imencode
from . import _budget

LOG = logging.getLogger("gpen_engine.serve")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m gpen_engine.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="converted GPEN model (.gpw)")
    ap.add_argument("--detector", required=True, help="converted RetinaFace model (.gpw)")
    ap.add_argument("--instances", default="1", help="engine instances, or 'auto' (from the memory plan)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="engine device (default cpu)")
    ap.add_argument("--precision", default=None, help="GPEN precision (fp32 on the CPU; fp16 or bf16 on CUDA)")
    ap.add_argument("--memory-budget", type=int, default=None,
                    help="bytes all instances may plan for (default: half the available RAM; 80%% of free GPU memory)")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads per instance (default: cores / instances)")
    ap.add_argument("--batch", type=int, default=1, help="faces per GPEN run in each instance")
    ap.add_argument("--format", default="png", choices=["png", "jpg", "webp"], help="encoding of the output image")
    ap.add_argument("--quality", type=int, default=95, help="JPEG / lossy WebP quality")
    ap.add_argument("--address", default="127.0.0.1", help="address to bind (default: loopback only)")
    ap.add_argument("--port", type=int, default=8000, help="HTTP port (gRPC: port + 1, metrics: port + 2)")
    ap.add_argument("--model-name", default="gpen")
    ap.add_argument("--log-file", default=None, help="Triton server's log (default: its stdout)")
    return ap.parse_args(argv)


def choose_instances(a):
    ip = _budget.instance_plan(a.model, a.detector, a.device, a.batch, a.precision)
    budget = a.memory_budget if a.memory_budget is not None else _budget.default_budget(a.device)
    fit = _budget.count_instances(ip, budget)
    if a.instances == "auto":
        n = fit
        if n < 1:
            raise SystemExit(f"gpen_engine.serve: one instance needs {ip['per_instance_bytes']} bytes "
                             f"(+{ip['shared_bytes']} shared), more than the budget of {budget} bytes")
    else:
        n = int(a.instances)
        if n < 1:
            raise SystemExit("gpen_engine.serve: --instances must be at least 1 or 'auto'")
    LOG.warning("%d instance(s) on %s: %d bytes planned each (+%d shared weights), budget %d bytes fits %d",
                n, a.device, ip["per_instance_bytes"], ip["shared_bytes"], budget, fit)
    return n, ip


def make_infer(restorer, fmt, quality):
    ext = "." + fmt

    def infer(requests):
        responses = []
        for req in requests:
            data = req["image"]
            blob = bytes(data.reshape(-1)[0]) if data.size == 1 else None
            if blob is None:
                raise ValueError("input 'image' must hold exactly one encoded image")
            img, meta = imdecode(blob, "request", meta=True)
            composite, faces = restorer.restore(img)
            out = imencode(ext, composite, quality=quality, meta=meta)
            responses.append({"image": np.array([out], dtype=np.object_),
                              "faces": np.array([json.dumps(faces).encode()], dtype=np.object_)})
        return responses

    return infer


def _prepend(var, paths):
    old = [p for p in os.environ.get(var, "").split(os.pathsep) if p]
    os.environ[var] = os.pathsep.join(dict.fromkeys([p for p in paths if p] + old))


def main(argv=None):
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    a = parse_args(argv)
    n, ip = choose_instances(a)
    threads = a.threads or max(1, (os.cpu_count() or 1) // n)
    # Triton's Python-backend stub embeds an interpreter: it must load this interpreter's libpython
    # (LD_LIBRARY_PATH; otherwise it may find the system's) and see this environment's packages
    # (PYTHONPATH: a venv's site-packages, where numpy and pytriton are).
    import sysconfig
    _prepend("LD_LIBRARY_PATH", [sysconfig.get_config_var("LIBDIR") or ""])
    _prepend("PYTHONPATH", [sysconfig.get_paths()[k] for k in ("purelib", "platlib")])
    from pytriton.model_config import ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig

    restorers = [Restorer(a.model, a.detector, device=a.device, precision=a.precision, threads=threads, batch=a.batch)
                 for _ in range(n)]
    config = TritonConfig(http_address=a.address, http_port=a.port, grpc_address=a.address, grpc_port=a.port + 1,
                          metrics_port=a.port + 2, allow_metrics=False, exit_timeout_secs=10,
                          log_file=a.log_file)
    with Triton(config=config) as triton:
        triton.bind(model_name=a.model_name, infer_func=[make_infer(r, a.format, a.quality) for r in restorers],
                    inputs=[Tensor(name="image", dtype=np.bytes_, shape=(1,))],
                    outputs=[Tensor(name="image", dtype=np.bytes_, shape=(1,)),
                             Tensor(name="faces", dtype=np.bytes_, shape=(1,))],
                    config=ModelConfig(batching=False), strict=False)
        stop = threading.Event()
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, lambda *_: stop.set())
        triton.run()  # returns once the server and every instance are ready
        # One JSON line once ready (the Triton server's own log goes to --log-file or stdout); the
        # version is the engine's one version (gpen::version(), CMakeLists.txt).
        print(json.dumps({"serving": a.model_name, "version": __version__, "http": f"{a.address}:{a.port}",
                          "instances": n, "threads_per_instance": threads,
                          "per_instance_bytes": ip["per_instance_bytes"], "shared_bytes": ip["shared_bytes"]}), flush=True)
        while not stop.wait(1.0):
            if not triton.is_alive():
                print("gpen_engine.serve: the Triton server died", file=sys.stderr, flush=True)
                return 1
    print("gpen_engine.serve: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
