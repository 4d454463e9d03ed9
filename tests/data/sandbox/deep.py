"""deep.py DEPTH: make a chain of DEPTH folders in $TMPDIR (deeper than a path may be
long), a file at the bottom, and folders without any permission on the way."""

import os
import sys
import tempfile

os.chdir(tempfile.gettempdir())
for _ in range(int(sys.argv[1])):
    os.mkdir("d")
    os.chdir("d")
with open("bottom.txt", "w") as f:
    f.write("x")
os.chdir(tempfile.gettempdir())
os.mkdir("locked")
os.mkdir("locked/inner")
open("locked/inner/f", "w").close()
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
print("made")
