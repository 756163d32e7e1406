"""Where journals are kept: memory, SQLite, PostgreSQL, and moving a run between them."""
