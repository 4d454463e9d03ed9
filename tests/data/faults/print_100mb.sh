#!/bin/sh
# Prints 100 MB on one line with no newline to stream $1 (out or err), then exits $2.
if [ "$1" = err ]; then
  head -c 104857600 /dev/zero | tr '\0' x >&2
else
  head -c 104857600 /dev/zero | tr '\0' x
fi
exit "$2"
