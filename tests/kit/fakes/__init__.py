"""The fake servers the tests talk to, on 127.0.0.1 only: the model providers' wire
protocols (real HTTP servers) and an MCP server (`mcp_server.py`, also run as a program)."""
