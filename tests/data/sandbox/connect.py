"""connect.py PORT: connect to 127.0.0.1:PORT; prints `connected` or the error, exit 0/1."""

import socket
import sys

try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10).close()
except OSError as exc:
    print(f"refused: {exc}")
    sys.exit(1)
print("connected")
