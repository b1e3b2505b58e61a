"""What the Python tests share: the CLI to compare with, the shared inputs, and models converted
once per run (the tiny GPEN fixture tests/fixtures/gpen/s32 and the real RetinaFace mobilenet0.25).
Environment: GPEN_CLI (the gpen binary), GPEN_SHARED_DIR, GPEN_TEST_TMP (a scratch folder)."""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("GPEN_CLI", os.path.join(ROOT, "build", "gpen"))
SHARED = os.environ.get("GPEN_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
TMP = os.environ.get("GPEN_TEST_TMP", os.path.join(ROOT, "build", "python-test"))
PHOTOS = [os.path.join(SHARED, "images", n) for n in ("kids_1024x768.jpg", "ffhq_lq_00000.png")]
SKIP = 77  # ctest's SKIP_RETURN_CODE


def skip(why):
    print("SKIPPED: " + why, flush=True)
    sys.exit(SKIP)


def need_inputs():
    if not os.access(CLI, os.X_OK):
        skip(f"no gpen CLI at {CLI} (build it first)")
    for p in [os.path.join(SHARED, "models", "retinaface-mobilenet0.25.pth")] + PHOTOS:
        if not os.path.exists(p):
            skip(f"shared input {p} is missing")


def gpen(*args, check=True):
    r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"gpen {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
    return r


def models():
    """(gpen .gpw, detector .gpw), converted by the CLI into TMP (once)."""
    os.makedirs(TMP, exist_ok=True)
    g, d = os.path.join(TMP, "s32.gpw"), os.path.join(TMP, "retinaface-mnet.gpw")
    if not os.path.exists(g):
        gpen("convert", os.path.join(ROOT, "tests", "fixtures", "gpen", "s32", "checkpoint.pth"), "-o", g)
    if not os.path.exists(d):
        gpen("convert", os.path.join(SHARED, "models", "retinaface-mobilenet0.25.pth"), "-o", d)
    return g, d


def gfpgan():
    """A random-weight GFPGANv1Clean at 512 (the size GFPGAN's photo flow aligns to), narrow 1/8
    and channel multiplier 1: the synthetic weights of `gpen bench --arch gfpgan`, kept (once)."""
    os.makedirs(TMP, exist_ok=True)
    g = os.path.join(TMP, "gfpgan_small.gpw")
    if not os.path.exists(g):
        gpen("--threads", "1", "bench", "--arch", "gfpgan", "--size", "512", "--channel-multiplier", "1", "--narrow",
             "0.125", "--runs", "1", "--warmup", "0", "--save-weights", g)
    return g


def read(path):
    with open(path, "rb") as f:
        return f.read()


def cli_json(*args):
    return json.loads(gpen(*args).stdout)


def without_timing(j):
    """Plans carry how long planning took (plan_ms): the one field two runs cannot share."""
    if isinstance(j, dict):
        return {k: without_timing(v) for k, v in j.items() if k != "plan_ms"}
    if isinstance(j, list):
        return [without_timing(v) for v in j]
    return j


def write_safetensors(path, tensors):
    """float32 arrays as a safetensors file (8-byte header length, JSON header, raw data)."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        b = a.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def tiny_realesrnet(out_dir):
    """A tiny RealESRNet x2 (8 features, 1 block, random weights in the official key names),
    converted by the CLI into out_dir; returns the .gpw."""
    import numpy as np
    rng = np.random.default_rng(3)
    nf, gc, tensors = 8, 8, {}

    def conv(name, co, ci):
        tensors[name + ".weight"] = (rng.standard_normal((co, ci, 3, 3)) * (0.5 / (3 * ci ** 0.5))).astype(np.float32)
        tensors[name + ".bias"] = (rng.standard_normal(co) * 0.01).astype(np.float32)

    conv("conv_first", nf, 12)
    for r in (1, 2, 3):
        for k in range(1, 6):
            conv(f"body.0.rdb{r}.conv{k}", nf if k == 5 else gc, nf + (k - 1) * gc)
    for n in ("conv_body", "conv_up1", "conv_up2", "conv_hr"):
        conv(n, nf, nf)
    conv("conv_last", 3, nf)
    st = os.path.join(out_dir, "tiny_x2.safetensors")
    write_safetensors(st, tensors)
    sr = os.path.join(out_dir, "tiny_x2.gpw")
    gpen("convert", st, "-o", sr)
    return sr


def import_engine():
    """The installed gpen_engine. pip installed it, so failing to import it (a missing symbol in the
    extension, say) is a failure of the package, never a reason to skip."""
    try:
        import gpen_engine
    except ImportError as e:
        print(f"FAILED: the installed gpen_engine cannot be imported: {e}", file=sys.stderr)
        sys.exit(1)
    return gpen_engine
