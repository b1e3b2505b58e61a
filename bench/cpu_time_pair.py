#!/usr/bin/env python3
"""CPU time per GPEN run of two gpen binaries, alternating, for a loaded machine.

On a shared machine the wall time of a 2-thread run is mostly how often the scheduler lets both
threads in; the CPU time the process consumes (user + sys over all threads) is much steadier.
Per run: (CPU of `gpen bench --runs R`) - (CPU of `--runs 1`), divided by R - 1, so start-up,
synthetic weights and the warm-up run cancel. OpenMP threads sleep instead of spinning
(OMP_WAIT_POLICY=PASSIVE), or the spinning would count as work.
Usage: bench/cpu_time_pair.py BASE_GPEN NEW_GPEN [--size 256 --cm 1 --narrow 0.5 --runs 11 --pairs 3 --threads 2]
"""
import argparse
import os
import resource
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--size", default="256")
    ap.add_argument("--cm", default="1")
    ap.add_argument("--narrow", default="0.5")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", default="2")
    a = ap.parse_args()
    if a.runs < 2:
        ap.error("--runs must be at least 2")
    env = dict(os.environ, GOMP_SPINCOUNT="0", OMP_WAIT_POLICY="PASSIVE")

    def cpu_s(gpen, runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([gpen, "--threads", a.threads, "bench", "--device", "cpu", "--size", a.size, "--channel-multiplier",
                        a.cm, "--narrow", a.narrow, "--runs", str(runs), "--warmup", "1"],
                       capture_output=True, env=env, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)

    ratios = []
    for p in range(a.pairs):
        ms = {}
        for name, gpen in (("base", a.base), ("new", a.new)):
            ms[name] = (cpu_s(gpen, a.runs) - cpu_s(gpen, 1)) / (a.runs - 1) * 1000
        ratios.append(ms["base"] / ms["new"])
        print(f"pair {p}: base {ms['base']:.1f} ms CPU/run, new {ms['new']:.1f} ms CPU/run, base/new {ratios[-1]:.3f}",
              flush=True)
    print(f"base/new: min {min(ratios):.3f}, max {max(ratios):.3f}, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
