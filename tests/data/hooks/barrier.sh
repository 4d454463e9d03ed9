#!/bin/sh
# barrier.sh DIR N SECONDS: leaves a mark in DIR, waits until N marks are there (the other
# calls' hooks have started too), then sleeps SECONDS and exits 0. Proves hooks run at the
# same time: run one after another, the first waits alone until its time limit kills it.
dir=$1 n=$2
mkdir -p "$dir"
mktemp "$dir/mark.XXXXXX" >/dev/null  # not $$: a hook runs in a PID namespace of its own
while [ "$(ls "$dir" | wc -l)" -lt "$n" ]; do
  sleep 0.02
done
sleep "$3"
