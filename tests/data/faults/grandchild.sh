#!/bin/sh
# Exits 0 at once, leaving a grandchild (its pid in $1) that holds stdout and stderr open.
sleep 30 &
echo $! > "$1"
echo "left a grandchild behind"
exit 0
