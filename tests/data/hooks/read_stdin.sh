#!/bin/sh
# Fails when anything can be read on stdin (it should be /dev/null).
if read -r line; then
  echo "stdin had: $line" >&2
  exit 1
fi
exit 0
