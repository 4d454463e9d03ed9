#!/bin/sh
# Allows every call: exits 0 and prints nothing.
exit 0
