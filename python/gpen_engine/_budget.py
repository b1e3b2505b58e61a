"""How many engine instances fit a memory budget, and what share of a GPU each one takes: the
figures come from the memory plan (the same as `gpen plan --pipeline --json`), not from trial."""
import os
import shutil
import subprocess

from . import info, plan

# The largest detector input: photos whose longer side exceeds 1500 are shrunk to 1000 for
# detection (RetinaFace's rule), so a 1500 x 1500 input bounds the detector's arena.
WORST_DETECT_INPUT = "1500x1500"


def available_ram():
    """MemAvailable, as `gpen restore` reads it for its default budget."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 4 << 30


def gpu_memory():
    """(free, total) bytes of GPU 0 from nvidia-smi, or None without one."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=memory.free,memory.total", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.split(",")
        return int(out[0]) << 20, int(out[1]) << 20
    except (subprocess.SubprocessError, ValueError, IndexError, OSError):
        return None


def instance_plan(model, detector, device="cpu", batch=1, precision=None):
    """The planned memory of one engine instance (detector and GPEN sharing one arena, as
    FaceRestorer runs them). On the CPU the weights are mapped from the .gpw file, so instances in
    one process share them; on a GPU every instance uploads its own copy."""
    backbone = info(detector)["config"].get("backbone", "mobilenet0.25")
    arch = "retinaface-r50" if backbone == "resnet50" else "retinaface-mnet"
    on_gpu = device == "cuda"
    prec = precision or ("fp16" if on_gpu else "fp32")
    p = plan(model, pipeline=True, arch=arch, input_size=WORST_DETECT_INPUT, batch=batch, precision=prec,
             device="cuda" if on_gpu else "cpu")
    joint = p["joint"]
    per_instance = joint["arena_bytes"] + joint["workspace_bytes"] + (joint["weights_bytes"] if on_gpu else 0)
    shared = 0 if on_gpu else joint["weights_bytes"]
    return {"device": device, "precision": prec, "batch": batch, "per_instance_bytes": per_instance,
            "shared_bytes": shared, "plan": p}


def count_instances(ip, budget_bytes, cpus=None):
    """Instances whose planned memory fits the budget; on the CPU also at most one per core, since
    more would only take turns on the same cores."""
    n = max(0, (budget_bytes - ip["shared_bytes"]) // max(1, ip["per_instance_bytes"]))
    if ip["device"] == "cpu":
        n = min(n, cpus or os.cpu_count() or 1)
    return int(n)


def default_budget(device):
    """As `gpen restore`: half the available RAM on the CPU, 80% of the free GPU memory."""
    if device == "cuda":
        mem = gpu_memory()
        if mem is None:
            raise RuntimeError("no GPU memory figure (nvidia-smi): pass --memory-budget")
        return mem[0] // 10 * 8
    return available_ram() // 2


def gpu_fraction(ip, gpu_total_bytes):
    """The share of one GPU an instance takes: its planned footprint over the device's memory, so
    that Ray packs floor(1 / fraction) instances on a GPU and never more than fit."""
    return min(1.0, ip["per_instance_bytes"] / float(gpu_total_bytes))
