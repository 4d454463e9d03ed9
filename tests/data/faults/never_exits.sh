#!/bin/sh
# A hook that never exits: writes its pid to $1, then waits forever.
echo $$ > "$1"
exec sleep 1000
