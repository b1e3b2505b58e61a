#!/usr/bin/env python3
"""`gpen serve` with a GFPGAN model (a small random-weight GFPGANv1Clean at 512: the synthetic weights
of `gpen bench --arch gfpgan`), every answer checked against docs/openapi.yaml: photos and aligned
crops answered with the bytes `gpen restore` (and `--aligned`) writes with that model; the options
only GPEN takes (mask, sr) refused with a 400 naming the option; /v1/plan holds GFPGAN's plan (the
one `gpen plan --arch gfpgan -m` prints) and the detector's at 1500 x 1500, and /metrics the
figures of GFPGAN's memory."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_harness import (GPEN, SHARED, Checks, OpenApi, Server, check_face_model_answers, models, need,  # noqa: E402
                           run, scratch)

check = Checks()


def without_timing(j):
    return {k: v for k, v in j.items() if k != "plan_ms"}


def main():
    work = scratch("gfpgan")
    _, det = models(os.path.dirname(work))
    api = OpenApi()
    photo = os.path.join(SHARED, "images", "kids_1024x768.jpg")
    face = os.path.join(SHARED, "images", "ffhq_lq_00000.png")
    need(photo, "the kids photo")
    need(face, "an aligned face")
    model = os.path.join(work, "gfpgan_small.gpw")
    run([GPEN, "--threads", "1", "bench", "--arch", "gfpgan", "--size", "512", "--channel-multiplier", "1", "--narrow",
         "0.125", "--runs", "1", "--warmup", "0", "--save-weights", model])

    # The CLI's answers.
    report = os.path.join(work, "report.json")
    run([GPEN, "restore", "-m", model, "-d", det, photo, "-o", os.path.join(work, "kids.png"), "--report", report])
    faces = json.load(open(report))["images"][0]
    run([GPEN, "restore", "-m", model, "--aligned", face, "-o", os.path.join(work, "aligned.png")])
    check(faces["faces_restored"] > 0, "the kids photo has faces GFPGAN's flow restores")

    s = Server(["-m", model, "-d", det])
    try:
        # The CLI's bytes; GPEN's options refused naming GFPGAN.
        call = check_face_model_answers(s, api, check, "GFPGAN", photo, face, os.path.join(work, "kids.png"),
                                        os.path.join(work, "aligned.png"), faces,
                                        ("mask=rect", "mask=parse", "sr=1", "aligned=1&sr=0"))

        # The plan: GFPGAN's network as `gpen plan --arch gfpgan -m` plans it, the detector at
        # 1500 x 1500 as `gpen plan --arch retinaface-mnet` does, nothing shared.
        st, _, b = call("GET", "/v1/plan")
        plan = json.loads(b)
        gen = json.loads(run([GPEN, "plan", "--arch", "gfpgan", "-m", model, "--json"]).stdout)
        det_plan = json.loads(run([GPEN, "plan", "--arch", "retinaface-mnet", "--input-size", "1500x1500",
                                   "--json"]).stdout)
        check(without_timing({k: v for k, v in plan["generator"].items() if k != "model"}) == without_timing(gen),
              "plan: the generator is gpen plan --arch gfpgan's")
        check(without_timing(plan["detector"]) == without_timing(det_plan), "plan: the detector at 1500 x 1500")
        check(plan["batch_limit"] == 1 and plan["bytes_saved"] == 0 and plan["joint"]["total_bytes"] ==
              plan["separate"]["total_bytes"], "plan: one face per run, no arena shared")
        # The metrics: GFPGAN's weights, its arena beside the detector's, its workspace.
        metrics = call("GET", "/metrics")[2].decode()

        def gauge(name):
            return int(float(re.search(rf"^{name} (\S+)$", metrics, re.M).group(1)))

        check(gauge("gpen_weights_bytes") == gen["weights_bytes"], "metrics: GFPGAN's weights")
        check(gauge("gpen_workspace_bytes") == gen["workspace_bytes"], "metrics: GFPGAN's workspace")
        check(gauge("gpen_arena_bytes") >= gen["arena_bytes"] + det_plan["arena_bytes"],
              "metrics: GFPGAN's arena and the detector's")
        check(gauge("gpen_batch_limit") == 1, "metrics: batch limit 1")
        check(s.stop() == 0, "SIGTERM: exit 0")
    finally:
        s.__exit__()
    print(f"test_serve_gfpgan: {len(check.made)} checks passed")


if __name__ == "__main__":
    main()
