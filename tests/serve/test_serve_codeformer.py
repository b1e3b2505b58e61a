#!/usr/bin/env python3
"""`gpen serve` with a CodeFormer model (the CodeFormer of tests/codeformer_fixture.h: the official
network with a reduced transformer and the full VQGAN, every weight by the seeded rule of
tests/reference/make_codeformer_fixtures.py, saved as a checkpoint and converted with `gpen
convert`), every answer checked against docs/openapi.yaml. The fidelity w is a start-up option of
the service (`--fidelity`, no request parameter takes it): started with w 0.7 and
--only-center-face, its photos and aligned crops are answered with the bytes `gpen restore` (and
`--aligned`) writes with the same options, which differ from those at the default w 0.5; the
options only GPEN takes (mask, sr) are refused with a 400 naming the option and CodeFormer. The
checkpoint is built with the official network: skipped (77) without torch or the official package
(CODEFORMER_PIP, default /tmp/codeformer-official; scripts/reference_packages.sh installs it)."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from serve_harness import (GPEN, SHARED, Checks, OpenApi, Server, check_face_model_answers, models, need,  # noqa: E402
                           read, run, scratch, skip)

check = Checks()


def codeformer_checkpoint(path):
    """The fixture's network with the rule's weights, as the released file holds them (params_ema)."""
    root = os.environ.get("CODEFORMER_PIP", "/tmp/codeformer-official")
    need(os.path.join(root, "codeformer", "basicsr", "archs", "codeformer_arch.py"), "CodeFormer's official code")
    try:
        import torch
    except ImportError:
        skip("torch is missing (the checkpoint is built with the official network)")
    os.environ["CODEFORMER_PIP"] = root
    sys.path.insert(0, os.path.join(HERE, "..", "reference"))
    import make_codeformer_fixtures as fixtures
    from make_transformer_fixtures import load_official
    net = load_official().CodeFormer(**fixtures.CONFIG).eval()
    fixtures.weights(net)
    torch.save({"params_ema": net.state_dict()}, path)


def main():
    work = scratch("codeformer")
    _, det = models(os.path.dirname(work))
    api = OpenApi()
    photo = os.path.join(SHARED, "images", "kids_1024x768.jpg")
    face = os.path.join(SHARED, "images", "ffhq_lq_00001.png")
    need(photo, "the kids photo")
    need(face, "an aligned face")
    pth = os.path.join(work, "codeformer_fixture.pth")
    codeformer_checkpoint(pth)
    model = os.path.join(work, "codeformer_fixture.gpw")
    run([GPEN, "convert", pth, "-o", model])
    os.remove(pth)

    # The CLI's answers at w 0.7, and the aligned face at the default w 0.5.
    opts = ["--only-center-face", "--fidelity", "0.7"]
    report = os.path.join(work, "report.json")
    run([GPEN, "restore", "-m", model, "-d", det, photo, "-o", os.path.join(work, "kids.png"), "--report", report,
         *opts])
    faces = json.load(open(report))["images"][0]
    run([GPEN, "restore", "-m", model, "--aligned", face, "-o", os.path.join(work, "aligned.png"), "--fidelity", "0.7"])
    run([GPEN, "restore", "-m", model, "--aligned", face, "-o", os.path.join(work, "aligned_w05.png")])
    check(faces["faces_restored"] == 1, "the kids photo's centre face is restored by CodeFormer's flow")
    check(read(os.path.join(work, "aligned.png")) != read(os.path.join(work, "aligned_w05.png")),
          "w 0.7 and w 0.5 restore the face differently (so the comparisons below see the fidelity)")

    s = Server(["-m", model, "-d", det, *opts])
    try:
        # The CLI's bytes at w 0.7 (the service's start-up w); GPEN's options refused naming CodeFormer.
        call = check_face_model_answers(s, api, check, "CodeFormer", photo, face, os.path.join(work, "kids.png"),
                                        os.path.join(work, "aligned.png"), faces, ("mask=rect", "sr=1"))

        st, _, b = call("GET", "/v1/plan")
        check(json.loads(b)["batch_limit"] == 1, "plan: one face per run")
        metrics = call("GET", "/metrics")[2].decode()
        check(int(float(re.search(r"^gpen_batch_limit (\S+)$", metrics, re.M).group(1))) == 1, "metrics: batch limit 1")
        check(s.stop() == 0, "SIGTERM: exit 0")
    finally:
        s.__exit__()
    print(f"test_serve_codeformer: {len(check.made)} checks passed")


if __name__ == "__main__":
    main()
