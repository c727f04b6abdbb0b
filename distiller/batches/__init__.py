"""Batches: the unit of work between screening and the store (the model, its files on disk, its result journal)."""
