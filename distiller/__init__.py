"""distiller: turn AI-agent transcripts into a small, clean set of atomic beliefs about the user."""

__version__ = "0.1.0"
