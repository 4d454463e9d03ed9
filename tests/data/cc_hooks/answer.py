#!/usr/bin/env python3
"""A settings-shape hook whose answer the test chooses.

answer.py [--record FILE] [--sleep S] [--stdout TEXT] [--stderr TEXT] [--exit N]

Reads the JSON line on stdin, appends {"stdin", "cwd", "env", "start", "end"} as one JSON
line to FILE when asked, sleeps, prints TEXT to stdout / stderr (no newline added) and
exits N.
"""

import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--record")
parser.add_argument("--sleep", type=float, default=0.0)
parser.add_argument("--stdout", default="")
parser.add_argument("--stderr", default="")
parser.add_argument("--exit", type=int, default=0)
args = parser.parse_args()

start = time.time()
raw = sys.stdin.read()
time.sleep(args.sleep)
if args.record:
    with open(args.record, "a", encoding="utf-8") as f:
        entry = {"stdin": raw, "cwd": os.getcwd(), "env": dict(os.environ)}
        entry.update(start=start, end=time.time())
        f.write(json.dumps(entry) + "\n")
sys.stdout.write(args.stdout)
sys.stderr.write(args.stderr)
sys.exit(args.exit)
