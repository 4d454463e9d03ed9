#!/bin/sh
# Exits 0 at once but leaves a child behind that holds stdout and stderr open.
sleep 60 &
echo "left a child behind"
exit 0
