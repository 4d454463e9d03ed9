#!/bin/sh
# Refuses the call: a line on stdout, then the reason on stderr (error output is read first).
echo "this line went to stdout"
echo "generated/ is rebuilt, not edited" >&2
exit 2
