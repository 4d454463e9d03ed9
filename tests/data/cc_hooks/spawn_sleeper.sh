#!/bin/sh
# Leaves a grandchild holding stdout open, then exits 0 at once.
sleep 30 &
exit 0
