#!/bin/sh
# Sleeps $1 seconds, then exits 0: a slow but passing pre-tool hook.
sleep "$1"
