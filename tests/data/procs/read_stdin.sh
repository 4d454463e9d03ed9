#!/bin/sh
# Echoes its standard input back on stdout, then "done" on stderr.
cat
echo "done" >&2
