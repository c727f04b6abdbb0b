"""Batches: the unit of work between screening and the store (model, files on disk, administration)."""
