"""MongoDB setup: the exact commands, replica sets, shards, users."""
