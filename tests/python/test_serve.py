"""gpen_engine.serve under load: a PyTriton server started here answers 32 requests from 8
concurrent tritonclient clients with the bytes `gpen restore` writes, gives the 5 corrupt or
hostile images among them error responses while it keeps serving, and stops cleanly on SIGTERM."""
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.need_inputs()
common.import_engine()
try:
    import numpy as np
    import pytriton  # noqa: F401
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException
except ImportError as e:
    common.skip(f"serving needs gpen_engine, nvidia-pytriton and tritonclient[http] ({e})")

PHOTOS = [os.path.join(common.SHARED, "images", f"ffhq_lq_0000{i}.png") for i in range(4)]


def free_port_block():
    """A port p with p, p+1, p+2 free (HTTP, gRPC, metrics)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
        if p + 2 < 65536 and all(_free(p + k) for k in (1, 2)):
            return p
    raise RuntimeError("no three free ports in a row")


def _free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def corrupt_images():
    good = common.read(PHOTOS[0])
    # A PNG header that claims 60000 x 60000 pixels: refused from the header, before allocation.
    ihdr = b"IHDR" + (60000).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    huge = b"\x89PNG\r\n\x1a\n" + (13).to_bytes(4, "big") + ihdr + zlib.crc32(ihdr).to_bytes(4, "big")
    return [b"not an image at all", good[: len(good) // 3], b"\xff\xd8\xff\xe0" + os.urandom(200), huge,
            b"RIFF\x10\x00\x00\x00WEBPVP8 garbage"]


class Serve(unittest.TestCase):
    def test_concurrent_clients(self):
        model, det = common.models()
        out = os.path.join(common.TMP, "serve")
        os.makedirs(out, exist_ok=True)
        want = {}
        for p in PHOTOS:
            o = os.path.join(out, os.path.basename(p))
            common.gpen("restore", "-m", model, "-d", det, "--device", "cpu", p, "-o", o)
            want[p] = common.read(o)
        env = dict(os.environ, PYTRITON_HOME=os.path.join(common.TMP, "pytriton-home"))
        log, err = os.path.join(out, "stdout.txt"), os.path.join(out, "stderr.txt")

        def start():
            port = free_port_block()
            with open(log, "w") as so, open(err, "w") as se:
                return port, subprocess.Popen([sys.executable, "-m", "gpen_engine.serve", "--model", model, "--detector",
                                               det, "--instances", "2", "--threads", "1", "--port", str(port),
                                               "--log-file", os.path.join(out, "triton.log")], stdout=so, stderr=se,
                                              env=env)

        t0 = time.time()
        port, server = start()
        retried = False
        try:
            ready = None
            while ready is None and time.time() - t0 < 180:
                if server.poll() is not None:
                    msg = common.read(err).decode(errors="replace")
                    # PyTriton's proxy model sometimes reaches its handshake socket before the socket
                    # listens (seen once in 5 CI runs: "get_config_from_handshake_server ...
                    # Connection refused"), and Triton then fails the model's load: the server's own
                    # start-up, not the engine. One more start; any other exit, or a second one, fails.
                    if not retried and "get_config_from_handshake_server" in msg:
                        retried = True
                        print("test_serve: PyTriton's handshake race at start-up, starting the server again",
                              file=sys.stderr)
                        port, server = start()
                        continue
                    self.fail("the server exited before it was ready: " + msg[-3000:])
                lines = [ln for ln in common.read(log).decode(errors="replace").splitlines() if ln.startswith('{"serving"')]
                ready = json.loads(lines[0]) if lines else time.sleep(0.2)
            self.assertIsNotNone(ready, "the server was not ready within 3 minutes")
            self.assertEqual(ready["instances"], 2)
            self.assertEqual(ready["version"], common.import_engine().__version__)
            startup = time.time() - t0
            bad = corrupt_images()
            jobs = [("good", PHOTOS[i % 4]) for i in range(27)] + [("bad", b) for b in bad]
            order = list(range(32))
            order = order[::3] + order[1::3] + order[2::3]  # the bad ones spread among the good ones
            jobs = [jobs[i] for i in order]

            def client(k):
                c = httpclient.InferenceServerClient(url=f"127.0.0.1:{port}", network_timeout=300)
                results = []
                for kind, what in jobs[k::8]:
                    blob = common.read(what) if kind == "good" else what
                    inp = httpclient.InferInput("image", [1], "BYTES")
                    inp.set_data_from_numpy(np.array([blob], dtype=np.object_))
                    try:
                        r = c.infer("gpen", [inp])
                        results.append((kind, what, r.as_numpy("image")[0], json.loads(r.as_numpy("faces")[0])))
                    except InferenceServerException as e:
                        results.append((kind, what, None, str(e)))
                c.close()
                return results

            t1 = time.time()
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                results = [r for rs in pool.map(client, range(8)) for r in rs]
            elapsed = time.time() - t1
            self.assertEqual(len(results), 32)
            errors = 0
            for kind, what, image, faces in results:
                if kind == "good":
                    self.assertIsNotNone(image, f"{what}: {faces}")
                    self.assertEqual(bytes(image), want[what], what)
                    self.assertGreaterEqual(len(faces), 1)
                else:
                    self.assertIsNone(image, "a corrupt image got a result")
                    self.assertIn("request", faces)  # the engine's message names the input
                    errors += 1
            self.assertEqual(errors, 5)
            print(f"serve: ready in {startup:.1f} s, 32 requests (5 corrupt) from 8 clients in {elapsed:.1f} s")
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                rc = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                raise
        self.assertEqual(rc, 0, common.read(err)[-3000:])
        self.assertTrue(_free(port), "the HTTP port is still taken after the stop")


if __name__ == "__main__":
    unittest.main(verbosity=2)
