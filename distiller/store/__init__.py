"""The one DB access layer: connections, migrations, cursors, ingested messages and runs."""
