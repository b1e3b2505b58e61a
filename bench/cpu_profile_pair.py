#!/usr/bin/env python3
"""Per-node times of two gpen binaries, alternating, for a loaded machine: each invocation is
`gpen --threads T bench --device cpu --size 256 --channel-multiplier 1 --narrow 0.5 --runs 5
--profile --json` (every node timed alone, median of 5), REPS invocations per binary; prints the
profile totals and, per node, the least disturbed (minimum) time of each binary and their ratio,
the slowest 30 nodes of the first. A loaded machine inflates single invocations by 20 % and more,
so only the minima over several alternating invocations compare.
Usage: bench/cpu_profile_pair.py BASE_GPEN NEW_GPEN [REPS=5] [THREADS=1] [extra gpen bench args]
"""
import collections
import json
import os
import subprocess
import sys


def profile(obj):
    if isinstance(obj, dict):
        if "nodes" in obj and "by_op" in obj:
            return obj
        obj = list(obj.values())
    if isinstance(obj, list):
        for v in obj:
            r = profile(v)
            if r:
                return r
    return None


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bins = sys.argv[1:3]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    threads = sys.argv[4] if len(sys.argv) > 4 else "1"
    extra = sys.argv[5:]
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    mins = [collections.defaultdict(lambda: float("inf")) for _ in bins]
    totals = [[] for _ in bins]
    for _ in range(reps):
        for i, b in enumerate(bins):
            out = subprocess.run([b, "--threads", threads, "bench", "--device", "cpu", "--size", "256",
                                  "--channel-multiplier", "1", "--narrow", "0.5", "--runs", "5", "--profile", "--json"]
                                 + extra, capture_output=True, text=True, env=env, check=True).stdout
            p = profile(json.loads(out))
            totals[i].append(p["total_ms"])
            for e in p["nodes"]:
                mins[i][e["node"]] = min(mins[i][e["node"]], e["ms"])
    print("profile totals (ms, sum of node medians): base", [round(t, 1) for t in totals[0]], "new",
          [round(t, 1) for t in totals[1]])
    print("least disturbed totals: base %.2f, new %.2f; sums of per-node minima: base %.2f, new %.2f, load %.1f" %
          (min(totals[0]), min(totals[1]), sum(mins[0].values()), sum(mins[1].values()), os.getloadavg()[0]))
    print("%-28s %9s %9s %7s" % ("node", "base ms", "new ms", "ratio"))
    for k in sorted(mins[0], key=lambda k: -mins[0][k])[:30]:
        print("%-28s %9.3f %9.3f %6.2fx" % (k, mins[0][k], mins[1][k], mins[0][k] / mins[1][k]))


if __name__ == "__main__":
    main()
