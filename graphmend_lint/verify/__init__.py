"""Verify side of graphmend-lint: runs real torch Dynamo to check what the static rules predict."""
