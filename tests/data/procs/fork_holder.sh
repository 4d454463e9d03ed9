#!/bin/sh
# Starts a grandchild that keeps stdout and stderr open for 30 s, writes its pid to $1,
# and exits at once.
sleep 30 &
echo "$!" > "$1"
echo "parent done"
