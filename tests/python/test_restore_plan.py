"""The CLI and the Python package set a restore up alike (one setup: the engine's Restorer): for the
same memory budget, the plan `gpen restore --report` writes (GPEN's batch, banded or not, the
budget it came from, the plan's bytes, the SR share) equals Restorer.plan, and the SR tile a photo
gets there equals Restorer.sr_tile's. Budgets for the s32 fixture: one that keeps batch 16
unbanded, two that need banding (at batches 2 and 6), and one with RealESRNet beside GPEN. The
low-memory mode (`--memory-budget`, low_memory=True) gives the same photo and the same account."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.need_inputs()
ge = common.import_engine()


class RestorePlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.det = common.models()
        cls.out = os.path.join(common.TMP, "restore_plan")
        os.makedirs(cls.out, exist_ok=True)
        cls.photo = common.PHOTOS[1]

    def cli_report(self, name, *args):
        report = os.path.join(self.out, name + ".json")
        common.gpen("restore", "-m", self.model, "-d", self.det, "--device", "cpu", *args, self.photo, "-o",
                    os.path.join(self.out, name + ".png"), "--report", report)
        with open(report) as f:
            return json.load(f)

    def test_same_plan_for_the_same_budget(self):
        banded = set()
        for budget in (700000, 1000000, "8MiB"):
            with self.subTest(budget=budget):
                cli = self.cli_report(f"plan_{budget}", "--vram-budget", str(budget))["plan"]
                py = ge.Restorer(self.model, self.det, device="cpu", memory_budget=budget).plan
                self.assertEqual(py, cli)
                self.assertTrue(py["memory_budget_given"])
                self.assertLessEqual(py["gpen"]["total_bytes"], py["memory_budget_bytes"])
                banded.add(py["gpen"]["banded"])
        self.assertEqual(banded, {True, False}, "the budgets should make both banded and unbanded plans")

    def test_same_sr_tile_for_the_same_budget(self):
        sr = common.tiny_realesrnet(self.out)
        report = self.cli_report("plan_sr", "--vram-budget", "6MiB", "--sr", sr)
        py = ge.Restorer(self.model, self.det, sr=sr, device="cpu", memory_budget="6MiB")
        self.assertEqual(py.plan, report["plan"])
        self.assertGreater(py.plan["sr"]["budget_bytes"], 0)
        h, w = ge.imread(self.photo).shape[:2]
        tile, why = py.sr_tile(w, h)
        self.assertEqual(tile, report["images"][0]["sr"]["tile"])
        self.assertEqual(why, report["images"][0]["sr"]["tile_reason"])
        self.assertGreater(tile, 0, "6MiB should make RealESRNet tile this photo")

    def test_low_memory_mode_as_the_cli(self):
        # gpen restore --memory-budget and Restorer(low_memory=True): the same photo, the same account.
        report = self.cli_report("low_memory", "--memory-budget", "48MiB")
        r = ge.Restorer(self.model, self.det, device="cpu", memory_budget="48MiB", low_memory=True)
        self.assertTrue(r.plan["low_memory"])
        self.assertEqual(r.plan, report["plan"])
        out, faces = r.restore(ge.imread(self.photo))
        want = ge.imread(os.path.join(self.out, "low_memory.png"))
        self.assertTrue((out == want).all())
        account = r.memory["low_memory"]
        self.assertEqual(account, report["memory"]["low_memory"])
        self.assertLessEqual(account["planned_bytes"], account["budget_bytes"])
        with self.assertRaisesRegex(ge.Error, "--parse"):
            ge.Restorer(self.model, self.det, parse=self.model, device="cpu", memory_budget="48MiB", low_memory=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
