#!/bin/sh
# wait_for.sh MARK GO: a pre-tool hook that leaves MARK, then waits until GO exists.
# The test sees MARK (the job is running, the jobs before it have finished) and then kills
# or interrupts the shard while the hook waits.
: >"$1"
while [ ! -e "$2" ]; do
  sleep 0.02
done
