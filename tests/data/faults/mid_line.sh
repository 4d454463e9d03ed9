#!/bin/sh
# Prints half a line with no newline to stream $1 (out or err), then exits $2.
if [ "$1" = err ]; then
  printf 'half a line' >&2
else
  printf 'half a line'
fi
exit "$2"
