"""Recording layer: graphs, ops, tensors, devices. Runs nothing; imports no other layer."""
