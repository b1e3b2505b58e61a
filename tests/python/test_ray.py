"""gpen_engine.ray_restore on a local Ray cluster (2 CPUs): a small folder with a subfolder and a
corrupt file is restored with the names and the bytes of `gpen restore IN_DIR -o OUT_DIR`, the
corrupt file is reported and skipped, the originals are untouched."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.need_inputs()
common.import_engine()
try:
    import ray  # noqa: F401
    import ray.data  # noqa: F401
except ImportError as e:
    common.skip(f"Ray Data is not installed (pip install 'ray[data]'): {e}")


def tree(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = hashlib.sha256(common.read(p)).hexdigest()
    return out


class RayRestore(unittest.TestCase):
    def test_folder(self):
        model, det = common.models()
        base = os.path.join(common.TMP, "ray")
        shutil.rmtree(base, ignore_errors=True)
        src = os.path.join(base, "in")
        os.makedirs(os.path.join(src, "sub"))
        imgs = os.path.join(common.SHARED, "images")
        shutil.copy(os.path.join(imgs, "ffhq_lq_00001.png"), os.path.join(src, "a.png"))
        shutil.copy(os.path.join(imgs, "ffhq_lq_00002.png"), os.path.join(src, "sub", "b.png"))
        shutil.copy(os.path.join(imgs, "kids_1024x768.jpg"), os.path.join(src, "sub", "kids.jpg"))
        with open(os.path.join(src, "broken.jpg"), "wb") as f:
            f.write(common.read(os.path.join(imgs, "kids_1024x768.jpg"))[:5000])
        before = tree(src)
        cli_out, ray_out = os.path.join(base, "cli"), os.path.join(base, "ray")
        r = common.gpen("restore", "-m", model, "-d", det, "--device", "cpu", src, "-o", cli_out, check=False)
        self.assertNotEqual(r.returncode, 0)  # the CLI fails the run for the broken file, writes the rest
        t0 = time.time()
        run = subprocess.run([sys.executable, "-m", "gpen_engine.ray_restore", src, ray_out, "--model", model,
                              "--detector", det, "--num-cpus", "2", "--report", os.path.join(base, "report.json")],
                             capture_output=True, text=True, timeout=300)
        elapsed = time.time() - t0
        self.assertEqual(run.returncode, 1, run.stderr[-3000:])
        self.assertIn("broken.jpg", run.stderr)
        summary = json.loads(run.stdout.strip().splitlines()[-1])
        self.assertEqual((summary["images"], summary["restored"], summary["failed"]), (4, 3, 1))
        self.assertEqual(summary["actors"], 2)
        self.assertEqual(summary["num_gpus_per_actor"], 0.0)
        want, got = tree(cli_out), tree(ray_out)
        self.assertEqual(sorted(want), ["a.png", "sub/b.png", "sub/kids.jpg"])
        self.assertEqual(got, want)  # same names, same bytes, nothing partial left
        self.assertEqual(tree(src), before)
        print(f"ray_restore: 4 files (1 corrupt) in {elapsed:.1f} s including the cluster's start")


if __name__ == "__main__":
    unittest.main(verbosity=2)
