#!/bin/sh
# Writes its pid to $1, then becomes a 30 s sleep (same pid).
echo "$$" > "$1"
exec sleep 30
