#!/usr/bin/env bash
# A Stop hook in the shape of ralph-wiggum's: it keeps the model going, round after round,
# until its state file has counted ROUNDS rounds, then removes the file and lets it stop.
# loop_until.sh STATE ROUNDS
state="$1"; rounds="$2"
cat > /dev/null
n=$(( $(cat "$state" 2>/dev/null || echo 0) + 1 ))
if [ "$n" -ge "$rounds" ]; then
  rm -f "$state"
  exit 0
fi
echo "$n" > "$state"
echo "round $n of $rounds: keep going" >&2
exit 2
