"""The run: read the new tails, screen, pack, dispatch to an extractor, commit with the cursors in one transaction."""
