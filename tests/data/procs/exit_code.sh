#!/bin/sh
# Prints one line on each stream, then exits with the code given (default 3).
echo "to stdout"
echo "to stderr" >&2
exit "${1:-3}"
