#!/usr/bin/env python3
"""Fails when a tracked file says how the project was developed instead of what it is: the word
"session" or "sessions" followed by a number in its text, or a session tag in its path
("session21_...", "...-s27", "...-s27-b/"). Git history keeps how the work went; the product's
code, docs, scripts, tests and file names speak of the product.

Prints one line per finding, as file:line: text (or file: for a name), and exits 1 when there is
any. Usage: scripts/check_product_words.py [ROOT] (default: the checkout this script is in).
"""
import os
import re
import subprocess
import sys

WORDS = re.compile(r"\bsessions?\s+[0-9]", re.I)
# "session" glued to a number, or a hyphen, an "s" and a number ending a name part. An underscore
# before the "s" is not a tag: the tree names strides and sizes so (winograd_s2, gpen_s64).
NAME_TAG = re.compile(r"sessions?[-_ ]?[0-9]|-s[0-9]+(?=[-_./]|$)", re.I)


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    findings = []
    files = tracked_files(root)
    for rel in files:
        if NAME_TAG.search(rel):
            findings.append(f"{rel}: a session tag in the file name")
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue  # deleted in the work tree, not yet committed
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if WORDS.search(line):
                findings.append(f"{rel}:{n}: {line.strip()[:160]}")
    for f in findings:
        print(f)
    if findings:
        print(f"check_product_words: {len(findings)} finding(s) in {len(files)} tracked files: say what the "
              "product is and does; the development history belongs in git", file=sys.stderr)
        return 1
    print(f"check_product_words: {len(files)} tracked files, no session words or tags")
    return 0


if __name__ == "__main__":
    sys.exit(main())
