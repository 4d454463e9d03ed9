#!/bin/sh
# On SIGTERM takes 0.6 s to clean up, then writes "cleaned" to $1 and exits: a hook
# that needs part of its grace.
trap 'sleep 0.6; echo cleaned > "$1"; exit 0' TERM
echo ready
sleep 30 &
wait
