#!/usr/bin/env python3
"""The page of `gpen serve` in headless Chromium (Debian's chromium and chromium-driver, driven over
the WebDriver protocol with the standard library): a shared photo is uploaded through the page's
file input, the restored image appears beside the original and is the very file `gpen restore`
writes, the faces and the timing are shown, the before/after slider moves the split, the memory
plan is drawn, and the page fetched nothing but the server's own routes. A screenshot is kept as
the test's artifact (<build>/serve-test/page/page.png)."""
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import GPEN, SHARED, Server, models, need, read, run, scratch, skip  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver key of an element reference


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen([CHROMEDRIVER, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                self.call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise AssertionError("chromedriver did not start")
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--no-first-run", "--no-default-browser-check"]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise AssertionError(f"WebDriver {method} {path}: {e.read().decode(errors='replace')}")

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args):
        return self.s("POST", "/execute/async", {"script": script, "args": list(args)})

    def close(self):
        try:
            self.s("DELETE", "")
        finally:
            self.proc.terminate()
            self.proc.wait(30)


def main():
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        skip("chromium and chromium-driver are not installed (scripts/setup.sh installs them)")
    work = scratch("page")
    gpen, det = models(os.path.dirname(work))
    photo = os.path.join(SHARED, "images", "kids_1024x768.jpg")
    need(photo, "the shared photo")
    expected = os.path.join(work, "kids.jpg")
    run([GPEN, "restore", "-m", gpen, "-d", det, photo, "-o", expected])
    faces = json.loads(run([GPEN, "detect", "-d", det, photo, "--json"]).stdout)["faces"]

    server = Server(["-m", gpen, "-d", det])
    wd = None
    try:
        wd = WebDriver()
        base = f"http://127.0.0.1:{server.port}"
        wd.s("POST", "/url", {"url": base + "/"})
        # The plan is drawn once /readyz says ready.
        deadline = time.time() + 30
        while wd.js("return document.querySelectorAll('#plan-chart rect').length") == 0:
            assert time.time() < deadline, "the memory plan was not drawn"
            time.sleep(0.1)
        file_input = wd.s("POST", "/element", {"using": "css selector", "value": "#file"})[ELEMENT]
        wd.s("POST", f"/element/{file_input}/value", {"text": os.path.realpath(photo)})
        deadline = time.time() + 120
        while (state := wd.js("return document.body.dataset.state || ''")) not in ("restored", "error"):
            assert time.time() < deadline, "the restored image did not appear"
            time.sleep(0.1)
        status = wd.js("return document.getElementById('status').textContent")
        assert state == "restored", f"the page says: {status}"

        # The image shown is the file `gpen restore` writes, at the photo's size, beside the original.
        shown = base64.b64decode(wd.js_async(
            "const done = arguments[arguments.length - 1];"
            "fetch(document.getElementById('restored').src).then(r => r.arrayBuffer()).then(b => {"
            "  const u = new Uint8Array(b); let s = '';"
            "  for (let i = 0; i < u.length; i += 8192) s += String.fromCharCode.apply(null, u.subarray(i, i + 8192));"
            "  done(btoa(s)); });"))
        assert shown == read(expected), "the restored image on the page differs from gpen restore's"
        sizes = wd.js("const r = document.getElementById('restored'), o = document.getElementById('original');"
                      "return [r.naturalWidth, r.naturalHeight, o.naturalWidth, o.naturalHeight];")
        assert sizes == [1024, 768, 1024, 768], sizes
        assert f"{len(faces)} faces found" in status and " ms" in status, status
        rows = wd.js("return document.querySelectorAll('#faces tbody tr').length")
        assert rows == len(faces) > 0, (rows, len(faces))

        # The slider moves the split between restored (left) and original (right).
        clip = wd.js("const s = document.getElementById('slider'); s.value = 20;"
                     "s.dispatchEvent(new Event('input')); return document.getElementById('after-wrap').style.clipPath;")
        assert "80%" in clip, clip
        wd.js("const s = document.getElementById('slider'); s.value = 50; s.dispatchEvent(new Event('input'));")

        # Nothing but the server's own routes was fetched (blob: URLs are the page's own images).
        fetched = wd.js("return performance.getEntriesByType('resource').map(e => e.name)")
        foreign = [u for u in fetched if not (u.startswith(base + "/") or u.startswith("blob:"))]
        assert not foreign, foreign

        shot = os.path.join(work, "page.png")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(wd.s("GET", "/screenshot")))
        print(f"ok: restored image shown ({len(shown)} bytes, {len(faces)} faces); screenshot {shot}")
    finally:
        if wd:
            wd.close()
        rc = server.stop()
    assert rc == 0, rc


if __name__ == "__main__":
    main()
