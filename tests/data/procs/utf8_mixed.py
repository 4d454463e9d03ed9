#!/usr/bin/env python3
"""Writes valid UTF-8, then a byte that is not UTF-8, on stdout; a blank line then text on stderr."""

import sys

sys.stdout.buffer.write("héllo ".encode() + b"\xff\n")
sys.stderr.write("\n  first real line  \nsecond\n")
