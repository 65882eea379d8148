"""Source tasks: the poll loop, the sender, offsets committed after acknowledgement, KIP-618."""
