"""Loopback fakes of the model providers' wire protocols (real HTTP servers)."""
