#!/bin/sh
# rendezvous.sh DIR N SECONDS TOOL: a pre-tool hook. On a file_write, leave a mark in DIR and
# wait until N marks are there (the other roles reached their first write too); exit 1 when
# SECONDS pass first. Proves roles run at the same time: run one after another, the first
# waits alone.
dir=$1 n=$2 seconds=$3 tool=$4
[ "$tool" = file_write ] || exit 0
mkdir -p "$dir"
# A mark of its own: not "$dir/$$", since every hook runs in a PID namespace of its own
# (docs/security.md, "Your hooks"), where two hooks' shells may have the same pid.
mktemp "$dir/mark.XXXXXX" >/dev/null
end=$(( $(date +%s) + seconds ))
while [ "$(ls "$dir" | wc -l)" -lt "$n" ]; do
  if [ "$(date +%s)" -ge "$end" ]; then
    echo "alone after $seconds s" >&2
    exit 1
  fi
  sleep 0.05
done
