#!/bin/sh
# Never reads its standard input.
echo "not reading"
exit 0
