"""gpen_engine against the CLI: restore writes the bytes `gpen restore` writes, plan() is
`gpen plan --json`, info() is `gpen info --json`, and errors carry the engine's message."""
import os
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.need_inputs()
try:
    import numpy as np
except ImportError as e:
    common.skip(f"numpy cannot be imported ({e})")
ge = common.import_engine()


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.det = common.models()
        cls.out = os.path.join(common.TMP, "package")
        os.makedirs(cls.out, exist_ok=True)
        cls.restorer = ge.Restorer(cls.model, cls.det, device="cpu")

    def test_restore_equals_cli(self):
        for photo in common.PHOTOS:
            for ext in (".png", ".jpg"):
                name = os.path.splitext(os.path.basename(photo))[0] + ext
                cli_out = os.path.join(self.out, "cli_" + name)
                common.gpen("restore", "-m", self.model, "-d", self.det, "--device", "cpu", photo, "-o", cli_out)
                img, meta = ge.imread(photo, meta=True)
                composite, faces = self.restorer.restore(img)
                self.assertEqual(composite.shape, img.shape)
                self.assertGreater(len(faces), 0, photo)
                py_out = os.path.join(self.out, "py_" + name)
                ge.imwrite(py_out, composite, meta=meta)
                want = common.read(cli_out)
                self.assertEqual(common.read(py_out), want, f"{photo} -> {ext}")
                self.assertEqual(ge.imencode(ext, composite, meta=meta), want)

    def test_faces_equal_cli_detect(self):
        photo = common.PHOTOS[0]
        cli = common.cli_json("detect", "-d", self.det, "--device", "cpu", "--json", photo)
        cli_faces = cli["faces"]
        faces = ge.Detector(self.det, device="cpu").detect(ge.imread(photo))
        _, restored_faces = self.restorer.restore(ge.imread(photo))
        self.assertEqual(len(faces), len(cli_faces))
        self.assertEqual(len(restored_faces), len(cli_faces))
        for f, r, c in zip(faces, restored_faces, cli_faces):
            self.assertEqual(f["box"], r["box"])
            # The CLI prints each float32 exactly (as the double it widens to): equal, not close.
            self.assertEqual(list(f["box"]), c["box"])
            self.assertEqual([v for xy in f["landmarks"] for v in xy], c["landmarks"])
            self.assertEqual(f["score"], c["score"])

    def test_restore_aligned_equals_cli(self):
        crop = os.path.join(common.SHARED, "images", "ffhq_lq_00000.png")
        cli_out = os.path.join(self.out, "aligned_cli.png")
        common.gpen("restore", "--aligned", "-m", self.model, "--device", "cpu", crop, "-o", cli_out)
        face = self.restorer.restore_aligned(ge.imread(crop))
        self.assertEqual(face.shape, (32, 32, 3))
        self.assertEqual(ge.imencode(".png", face), common.read(cli_out))

    def test_version_is_the_one_version(self):
        # CMakeLists.txt's project version, through gpen::version() (the CLI, the extension) and
        # through pyproject.toml's regex (the package metadata).
        from importlib.metadata import version
        cli = common.gpen("--version").stdout.split("\n")[0].split()[1]
        self.assertEqual(ge.__version__, cli)
        self.assertEqual(version("gpen-engine"), cli)

    def test_plan_equals_cli(self):
        cases = [
            ({}, ["plan", "--json"]),
            ({"model": self.model, "batch": 3}, ["plan", "--json", "-m", self.model, "--batch", "3"]),
            ({"arch": "retinaface-mnet", "input_size": (640, 480)},
             ["plan", "--json", "--arch", "retinaface-mnet", "--input-size", "640x480"]),
            ({"pipeline": True, "arch": "retinaface-mnet", "model": self.model},
             ["plan", "--json", "--pipeline", "--arch", "retinaface-mnet", "-m", self.model]),
            ({"sizes": [64, 128], "batches": [1, 2]}, ["plan", "--json", "--sizes", "64,128", "--batches", "1,2"]),
            ({"size": 256, "max_batch_for": "1GiB"}, ["plan", "--json", "--size", "256", "--max-batch-for", "1GiB"]),
        ]
        for kwargs, args in cases:
            self.assertEqual(common.without_timing(ge.plan(**kwargs)),
                             common.without_timing(common.cli_json(*args)), args)

    def test_instance_count_from_plan(self):
        from gpen_engine import _budget
        ip = _budget.instance_plan(self.model, self.det)
        p = common.cli_json("plan", "--json", "--pipeline", "--arch", "retinaface-mnet", "-m", self.model,
                            "--input-size", "1500x1500")["joint"]
        per, shared = ip["per_instance_bytes"], ip["shared_bytes"]
        self.assertEqual(per, p["arena_bytes"] + p["workspace_bytes"])  # CPU: weights mapped once, shared
        self.assertEqual(shared, p["weights_bytes"])
        self.assertEqual(_budget.count_instances(ip, shared + 3 * per, cpus=16), 3)
        self.assertEqual(_budget.count_instances(ip, shared + 3 * per - 1, cpus=16), 2)
        self.assertEqual(_budget.count_instances(ip, shared + 3 * per, cpus=2), 2)  # one per core at most
        self.assertEqual(_budget.count_instances(ip, shared + per - 1, cpus=16), 0)
        self.assertEqual(_budget.gpu_fraction(dict(ip, device="cuda"), 4 * per), 0.25)

    def test_info_and_convert(self):
        self.assertEqual(ge.info(self.det, tensors=True), common.cli_json("info", "--json", "--tensors", self.det))
        out = os.path.join(self.out, "converted.gpw")
        r = ge.convert(os.path.join(common.ROOT, "tests", "fixtures", "gpen", "s32", "checkpoint.pth"), out)
        self.assertEqual(r["arch"], "gpen")
        self.assertEqual(common.read(out), common.read(self.model))
        # The 8-bit options read as the CLI reads them: the same file byte for byte.
        ck = os.path.join(common.ROOT, "tests", "fixtures", "gpen", "s32", "checkpoint.pth")
        q_py, q_cli = os.path.join(self.out, "q_py.gpw"), os.path.join(self.out, "q_cli.gpw")
        ge.convert(ck, q_py, dtype="int8", group_size=32, dense_dtype="int8", dense_layers="modulation,final_linear")
        common.gpen("convert", ck, "-o", q_cli, "--dtype", "int8", "--group-size", "32", "--dense-dtype", "int8",
                    "--dense-layers", "modulation,final_linear")
        self.assertEqual(common.read(q_py), common.read(q_cli))
        with self.assertRaises(ge.Error) as e:
            ge.convert(ck, q_py + ".bad", dtype="int8", dense_dtype="int8", dense_layers="stlye")
        self.assertIn("stlye", str(e.exception))

    def test_errors_carry_the_engine_message(self):
        with self.assertRaises(ge.Error) as e:
            ge.imdecode(b"\xff\xd8\xff garbage", "bad.jpg")
        self.assertIn("bad.jpg", str(e.exception))
        with self.assertRaises(ge.Error) as e:
            ge.imread(os.path.join(self.out, "missing.png"))
        self.assertIn("missing.png", str(e.exception))
        with self.assertRaises(ge.Error):
            ge.Restorer(self.det, self.det, device="cpu")  # a detector is no GPEN model
        with self.assertRaises(ValueError):
            self.restorer.restore(np.zeros((8, 8, 4), np.uint8))
        with self.assertRaises(ge.Error) as e:
            ge.Restorer(self.model, self.det, device="cpu", parse=self.model)  # a GPEN file is no ParseNet
        self.assertIn("not a ParseNet model", str(e.exception))
        with self.assertRaises(ge.Error):
            ge.Restorer(self.model, self.det, device="cpu", sr=self.det)  # nor a detector a RealESRNet

    def test_sr_equals_cli(self):
        sr = common.tiny_realesrnet(self.out)
        photo = common.PHOTOS[1]
        cli_out = os.path.join(self.out, "sr_cli.png")
        common.gpen("restore", "-m", self.model, "-d", self.det, "--device", "cpu", "--sr", sr, "--sr-tile", "64",
                    photo, "-o", cli_out)
        restorer = ge.Restorer(self.model, self.det, sr=sr, device="cpu", sr_tile="64")
        img, meta = ge.imread(photo, meta=True)
        composite, faces = restorer.restore(img)
        self.assertEqual(composite.shape, (2 * img.shape[0], 2 * img.shape[1], 3))
        self.assertEqual(ge.imencode(".png", composite, meta=meta), common.read(cli_out))

    def test_input_layouts(self):
        img = ge.imread(common.PHOTOS[1])
        want, _ = self.restorer.restore(img)
        # A non-contiguous view is copied into C order by the binding: same result.
        wide = np.zeros((img.shape[0], img.shape[1] * 2, 3), np.uint8)
        wide[:, ::2] = img
        got, _ = self.restorer.restore(wide[:, ::2])
        np.testing.assert_array_equal(got, want)
        # A read-only array is read in place (the engine borrows the pixels) and left unchanged.
        frozen = img.copy()
        frozen.setflags(write=False)
        got, _ = self.restorer.restore(frozen)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(frozen, img)

    def test_threads_share_one_restorer(self):
        img = ge.imread(common.PHOTOS[1])
        want, _ = self.restorer.restore(img)
        results = [None] * 4

        def work(i):
            results[i] = self.restorer.restore(img)[0]

        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for r in results:
            np.testing.assert_array_equal(r, want)


class Gfpgan(unittest.TestCase):
    """Restorer with a GFPGAN model: the flow the file's kind picks, as `gpen restore` runs it."""

    @classmethod
    def setUpClass(cls):
        _, cls.det = common.models()
        cls.model = common.gfpgan()
        cls.out = os.path.join(common.TMP, "package_gfpgan")
        os.makedirs(cls.out, exist_ok=True)

    def cli(self, name, *args):
        out = os.path.join(self.out, name)
        common.gpen("restore", "-m", self.model, *args, "-o", out)
        return common.read(out)

    def test_restore_equals_cli(self):
        photo = common.PHOTOS[0]
        want = self.cli("kids_cli.png", "-d", self.det, photo)
        r = ge.Restorer(self.model, self.det)
        composite, faces = r.restore(ge.imread(photo))
        self.assertGreater(len(faces), 0)
        self.assertEqual(ge.imencode(".png", composite), want)
        self.assertEqual(r.size, 512)
        self.assertEqual(r.memory["model"], "gfpgan")
        self.assertGreater(r.memory["arena_bytes"], 0)

    def test_upscale_and_only_center_face_reach_the_flow(self):
        photo = common.PHOTOS[0]
        want = self.cli("kids_up2_cli.png", "-d", self.det, photo, "--upscale", "2", "--only-center-face")
        img = ge.imread(photo)
        r = ge.Restorer(self.model, self.det, upscale=2, only_center_face=True)
        composite, _ = r.restore(img)
        self.assertEqual(composite.shape, (2 * img.shape[0], 2 * img.shape[1], 3))
        self.assertEqual(ge.imencode(".png", composite), want)

    def test_restore_aligned_equals_cli(self):
        crop = os.path.join(common.SHARED, "images", "ffhq_lq_00000.png")
        want = self.cli("aligned_cli.png", "--aligned", crop, "--blend", "0.5")
        face = ge.Restorer(self.model, self.det, alpha=0.5).restore_aligned(ge.imread(crop))
        self.assertEqual(face.shape, (512, 512, 3))
        self.assertEqual(ge.imencode(".png", face), want)

    def test_options_of_the_other_kind_are_refused(self):
        with self.assertRaises(ge.Error) as e:
            ge.Restorer(self.model, self.det, batch=2)
        self.assertIn("--batch is an option of GPEN models", str(e.exception))
        gpen_model, _ = common.models()
        with self.assertRaises(ge.Error) as e:
            ge.Restorer(gpen_model, self.det, upscale=2)
        self.assertIn("--upscale is an option of GFPGAN, CodeFormer and RestoreFormer models", str(e.exception))
        with self.assertRaises(ge.Error) as e:
            ge.Restorer(self.model, self.det, fidelity=0.7)
        self.assertIn("--fidelity is an option of CodeFormer models", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
