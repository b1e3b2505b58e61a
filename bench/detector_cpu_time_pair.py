#!/usr/bin/env python3
"""bench/cpu_time_pair.py for `gpen bench --arch retinaface` (kept for the commands in docs/):
Usage: bench/detector_cpu_time_pair.py BASE_GPEN NEW_GPEN -d DETECTOR.gpw --image IMG
       [--runs 4 --pairs 3 --threads 2]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_time_pair  # noqa: E402

if __name__ == "__main__":
    cpu_time_pair.main(detector_only=True)
