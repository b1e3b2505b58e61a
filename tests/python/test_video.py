"""Restorer.restore_video and gpen_engine.ray_restore's videos, on a clip with a keyframe every 4
frames, B-frames, faces and an AAC track (tests/video/make_clips.py: keyframes4_audio.mp4), encoded
losslessly (FFV1 in BGR) so that frames compare exactly: restore_video writes the frames and
timestamps `gpen video` writes; bad input raises gpen_engine.Error naming the file and leaves no
output, as do a progress callback that raises and Ctrl-C (KeyboardInterrupt, within a second); and the clip restored in segments by two Ray actors
and joined has the frames, frame timestamps and audio packets of a one-process run."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.need_inputs()
gpen_engine = common.import_engine()
if not gpen_engine.has_video():
    common.skip("this gpen_engine was built without videos (GPEN_VIDEO=OFF)")
if not shutil.which("ffprobe") or not shutil.which("ffmpeg"):
    common.skip("the ffmpeg and ffprobe programs are missing (scripts/setup.sh installs them)")

BASE = os.path.join(common.TMP, "video")
LOSSLESS = dict(codec="ffv1", pix_fmt="bgr0")  # Debian FFmpeg 5.1's FFV1 has no 8-bit gbrp


def clip():
    """The clip, made once by tests/video/make_clips.py (the system Python, which has OpenCV)."""
    clips = os.path.join(common.TMP, "video-clips")
    env = dict(os.environ, GPEN_SHARED_DIR=common.SHARED)
    subprocess.run(["/usr/bin/python3", os.path.join(common.ROOT, "tests", "video", "make_clips.py"), clips],
                   check=True, env=env, capture_output=True)
    return os.path.join(clips, "keyframes4_audio.mp4")


def frames(path):
    """Every frame decoded to BGR, as bytes."""
    return subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "bgr24",
                           "-"], check=True, capture_output=True).stdout


def probe(path, stream, entries):
    return subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", entries, "-of", "csv",
                           path], check=True, capture_output=True, text=True).stdout


class Video(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.det = common.models()
        cls.clip = clip()
        shutil.rmtree(BASE, ignore_errors=True)
        os.makedirs(BASE)
        cls.restorer = gpen_engine.Restorer(cls.model, cls.det, device="cpu")

    def cli(self, out, *args):
        report = out + ".json"
        common.gpen("video", "-m", self.model, "-d", self.det, "--device", "cpu", "--quiet", "--codec", "ffv1",
                    "--pix-fmt", "bgr0", "--report", report, self.clip, "-o", out, *args)
        with open(report) as f:
            return json.load(f)["videos"][0]

    def test_equals_cli(self):
        cli_out, py_out = os.path.join(BASE, "cli.mkv"), os.path.join(BASE, "py.mkv")
        want = self.cli(cli_out)
        seen = []
        got = self.restorer.restore_video(self.clip, py_out, progress=seen.append, **LOSSLESS)
        self.assertEqual((got["frames"], got["faces"]), (want["frames"], want["faces"]))
        self.assertEqual(got["frames"], 12)
        self.assertGreater(got["faces"], 0)
        self.assertEqual(got["encoding"], want["encoding"])
        self.assertEqual(seen[-1]["frames"], 12)
        self.assertEqual(frames(py_out), frames(cli_out))
        for s in ("v:0", "a:0"):
            self.assertEqual(probe(py_out, s, "packet=pts,dts,duration"), probe(cli_out, s, "packet=pts,dts,duration"))

    def test_gfpgan_equals_cli(self):
        # A GFPGAN model: the frames `gpen video` writes with it; its memory in the report.
        model = common.gfpgan()
        cli_out, py_out = os.path.join(BASE, "gfpgan_cli.mkv"), os.path.join(BASE, "gfpgan_py.mkv")
        report = cli_out + ".json"
        common.gpen("video", "-m", model, "-d", self.det, "--quiet", "--codec", "ffv1", "--pix-fmt",
                    "bgr0", "--report", report, self.clip, "-o", cli_out, "--duration", "0.2")
        with open(report) as f:
            want = json.load(f)["videos"][0]
        r = gpen_engine.Restorer(model, self.det)
        got = r.restore_video(self.clip, py_out, duration=0.2, **LOSSLESS)
        self.assertEqual((got["frames"], got["faces"]), (want["frames"], want["faces"]))
        self.assertEqual(frames(py_out), frames(cli_out))
        self.assertEqual(got["memory"]["restorer"]["model"], "gfpgan")
        self.assertEqual(got["memory"]["restorer"]["weights_bytes"], want["memory"]["restorer"]["weights_bytes"])
        with self.assertRaises(gpen_engine.Error) as e:
            r.restore_video(self.clip, os.path.join(BASE, "never.mkv"), smooth=3)
        self.assertIn("GFPGAN model", str(e.exception))
        self.assertFalse(os.path.exists(os.path.join(BASE, "never.mkv")))

    def test_cut_equals_cli(self):
        cli_out, py_out = os.path.join(BASE, "cli_cut.mkv"), os.path.join(BASE, "py_cut.mkv")
        want = self.cli(cli_out, "--start", "0.1", "--duration", "0.25")
        got = self.restorer.restore_video(self.clip, py_out, start=0.1, duration=0.25, **LOSSLESS)
        self.assertEqual(got["frames"], want["frames"])
        self.assertEqual(frames(py_out), frames(cli_out))
        self.assertEqual(probe(py_out, "v:0", "frame=pts_time"), probe(cli_out, "v:0", "frame=pts_time"))

    def test_smooth_equals_cli(self):
        cli_out, py_out = os.path.join(BASE, "cli_smooth.mkv"), os.path.join(BASE, "py_smooth.mkv")
        want = self.cli(cli_out, "--smooth", "3")
        got = self.restorer.restore_video(self.clip, py_out, smooth=3, **LOSSLESS)
        self.assertEqual(got["smooth"], want["smooth"])
        self.assertEqual(got["smooth"]["frames"], 3)
        self.assertEqual(frames(py_out), frames(cli_out))
        self.assertIsNone(self.restorer.restore_video(self.clip, py_out, **LOSSLESS)["smooth"])
        with self.assertRaises(gpen_engine.Error):
            self.restorer.restore_video(self.clip, py_out, smooth=65)

    def test_errors_leave_nothing(self):
        bad = os.path.join(BASE, "notes.mp4")
        with open(bad, "w") as f:
            f.write("not a video\n")
        out = os.path.join(BASE, "bad_out.mkv")
        with self.assertRaises(gpen_engine.Error) as e:
            self.restorer.restore_video(bad, out)
        self.assertIn(bad, str(e.exception))
        with self.assertRaises(gpen_engine.Error) as e:
            self.restorer.restore_video(self.clip, out, codec="no-such-encoder")
        self.assertIn("no-such-encoder", str(e.exception))

        def stop(p):
            if p["frames"] >= 3:
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.restorer.restore_video(self.clip, out, progress=stop, **LOSSLESS)
        self.assertEqual([n for n in os.listdir(BASE) if n.startswith(".bad_out") or n == "bad_out.mkv"], [])

    def test_ctrl_c(self):
        src = os.path.join(os.path.dirname(self.clip), "long.mp4")  # 750 frames
        out = os.path.join(BASE, "interrupted.mkv")
        child = (
            "import sys, gpen_engine as g\n"
            f"r = g.Restorer({self.model!r}, {self.det!r}, device='cpu')\n"
            "seen = []\n"
            "def progress(p):\n"
            "    if not seen:\n"
            "        seen.append(1)\n"
            "        print('started', flush=True)\n"
            "try:\n"
            f"    r.restore_video({src!r}, {out!r}, progress=progress)\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n"
            "    sys.exit(3)\n")
        p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline().strip(), "started")
        t0 = time.time()
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, stderr[-2000:])
        self.assertIn("interrupted", stdout)
        self.assertLess(time.time() - t0, 5.0)
        self.assertEqual([n for n in os.listdir(BASE) if "interrupted" in n], [])

    def test_keyframe_cuts(self):
        cuts = gpen_engine._gpen.video_keyframe_cuts(self.clip)
        self.assertEqual(len(cuts), 2)  # keyframes at 0.16 and 0.32 s, after the first
        for c, k in zip(cuts, (0.16, 0.32)):
            self.assertLess(c, k)
            self.assertGreater(c, k - 1 / 12800)

    def test_ray_segments(self):
        try:
            import ray  # noqa: F401
            import ray.data  # noqa: F401
        except ImportError:
            self.skipTest("Ray Data is not installed (pip install 'ray[data]')")
        one = os.path.join(BASE, "one.mkv")
        self.restorer.restore_video(self.clip, one, **LOSSLESS)
        for name, cut in (("ray.mkv", []), ("ray_cut.mkv", ["--start", "0.1", "--duration", "0.3"])):
            with self.subTest(cut=cut):
                out = os.path.join(BASE, name)
                run = subprocess.run([sys.executable, "-m", "gpen_engine.ray_restore", self.clip, out, "--model",
                                      self.model, "--detector", self.det, "--num-cpus", "2", "--codec", "ffv1",
                                      "--pix-fmt", "bgr0", *cut], capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stderr[-3000:])
                summary = json.loads(run.stdout.strip().splitlines()[-1])
                self.assertEqual((summary["videos"], summary["segments"], summary["failed"]), (1, 2, 0))
                want = one
                if cut:
                    want = os.path.join(BASE, "one_cut.mkv")
                    self.restorer.restore_video(self.clip, want, start=0.1, duration=0.3, **LOSSLESS)
                self.assertEqual(summary["frames"], len(frames(want)) // (320 * 240 * 3))
                self.assertEqual(frames(out), frames(want))
                for s in ("v:0", "a:0"):
                    self.assertEqual(probe(out, s, "packet=pts,dts,duration"), probe(want, s, "packet=pts,dts,duration"))
                self.assertEqual(probe(out, "v:0", "frame=pts_time"), probe(want, "v:0", "frame=pts_time"))
                self.assertEqual([n for n in os.listdir(BASE) if ".segments-" in n], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
