#!/bin/sh
# Prints $2 bytes (default 50 MB) on stdout, or on stderr when $1 is "err".
if [ "$1" = err ]; then
  head -c "${2:-52428800}" /dev/zero >&2
else
  head -c "${2:-52428800}" /dev/zero
fi
