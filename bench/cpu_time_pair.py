#!/usr/bin/env python3
"""CPU time per run of two gpen binaries, alternating, for a loaded machine.

On a shared machine the wall time of a 2-thread run is mostly how often the scheduler lets both
threads in; the CPU time the process consumes (user + sys over all threads) is much steadier.
Per run: (CPU of `gpen bench --runs R`) - (CPU of `--runs 1`), divided by R - 1, so start-up,
loading or synthetic weights and the warm-up run cancel. OpenMP threads sleep instead of spinning
(OMP_WAIT_POLICY=PASSIVE), or the spinning would count as work. With -d the runs are RetinaFace on
--image (`gpen bench --arch retinaface`), and the wall-time median of each invocation is printed too.
Usage: bench/cpu_time_pair.py BASE_GPEN NEW_GPEN [--size 256 --cm 1 --narrow 0.5 --runs 11 --pairs 3 --threads 2]
       bench/cpu_time_pair.py BASE_GPEN NEW_GPEN -d DETECTOR.gpw --image IMG [--runs 4 --pairs 3 --threads 2]
"""
import argparse
import json
import os
import resource
import subprocess


def main(argv=None, detector_only=False):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--size", default="256")
    ap.add_argument("--cm", default="1")
    ap.add_argument("--narrow", default="0.5")
    ap.add_argument("-d", "--detector", required=detector_only, help="RetinaFace .gpw: time the detector instead")
    ap.add_argument("--image", help="with -d: the photo")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", default="2")
    a = ap.parse_args(argv)
    if a.detector and not a.image:
        ap.error("-d needs --image")
    runs = a.runs if a.runs is not None else (4 if a.detector else 11)
    if runs < 2:
        ap.error("--runs must be at least 2")
    env = dict(os.environ, GOMP_SPINCOUNT="0", OMP_WAIT_POLICY="PASSIVE")
    what = (["--arch", "retinaface", "-d", a.detector, "--image", a.image] if a.detector else
            ["--size", a.size, "--channel-multiplier", a.cm, "--narrow", a.narrow])
    unit = "photo" if a.detector else "run"

    def run(gpen, n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([gpen, "--threads", a.threads, "bench", "--device", "cpu", *what, "--runs", str(n),
                              "--warmup", "1", "--json"], capture_output=True, env=env, check=True, text=True).stdout
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), json.loads(out)["median_ms"]

    ratios = []
    for p in range(a.pairs):
        ms, wall = {}, {}
        for name, gpen in (("base", a.base), ("new", a.new)):
            cpu_r, wall[name] = run(gpen, runs)
            cpu_1, _ = run(gpen, 1)
            ms[name] = (cpu_r - cpu_1) / (runs - 1) * 1000
        ratios.append(ms["base"] / ms["new"])
        walls = {k: f" (wall median {v:.0f} ms)" if a.detector else "" for k, v in wall.items()}
        print(f"pair {p}: base {ms['base']:.1f} ms CPU/{unit}{walls['base']}, new {ms['new']:.1f} ms CPU/{unit}"
              f"{walls['new']}, base/new {ratios[-1]:.3f}", flush=True)
    print(f"base/new: min {min(ratios):.3f}, max {max(ratios):.3f}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
