#!/usr/bin/env python3
"""CPU time per RetinaFace photo of two gpen binaries, alternating, for a loaded machine.

bench/cpu_time_pair.py's method for `gpen bench --arch retinaface`: per photo, (CPU of
`--runs R`) - (CPU of `--runs 1`), divided by R - 1, so start-up, loading and the warm-up run
cancel; OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE). The wall-time median
of each invocation is printed too (on a shared machine it is mostly the scheduler).
Usage: bench/detector_cpu_time_pair.py BASE_GPEN NEW_GPEN -d DETECTOR.gpw --image IMG
       [--runs 4 --pairs 3 --threads 2]
"""
import argparse
import json
import os
import resource
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("-d", "--detector", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", default="2")
    a = ap.parse_args()
    if a.runs < 2:
        ap.error("--runs must be at least 2")
    env = dict(os.environ, GOMP_SPINCOUNT="0", OMP_WAIT_POLICY="PASSIVE")

    def run(gpen, runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([gpen, "--threads", a.threads, "bench", "--device", "cpu", "--arch", "retinaface", "-d",
                              a.detector, "--image", a.image, "--runs", str(runs), "--warmup", "1", "--json"],
                             capture_output=True, env=env, check=True, text=True).stdout
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), json.loads(out)["median_ms"]

    ratios = []
    for p in range(a.pairs):
        ms, wall = {}, {}
        for name, gpen in (("base", a.base), ("new", a.new)):
            cpu_r, wall[name] = run(gpen, a.runs)
            cpu_1, _ = run(gpen, 1)
            ms[name] = (cpu_r - cpu_1) / (a.runs - 1) * 1000
        ratios.append(ms["base"] / ms["new"])
        print(f"pair {p}: base {ms['base']:.1f} ms CPU/photo (wall median {wall['base']:.0f} ms), new {ms['new']:.1f} "
              f"ms CPU/photo (wall median {wall['new']:.0f} ms), base/new {ratios[-1]:.3f}", flush=True)
    print(f"base/new: min {min(ratios):.3f}, max {max(ratios):.3f}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
