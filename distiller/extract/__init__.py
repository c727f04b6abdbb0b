"""Extractors: one protocol, several backends (Anthropic, offline rules, an external agent's JSONL)."""
