#!/bin/sh
# Sleeps SECONDS (default 30), then exits 0: past the limit unless SECONDS is small.
sleep "${1:-30}"
