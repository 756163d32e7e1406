"""Where journals are kept: memory, SQLite, PostgreSQL, any of them behind an HTTP server,
and moving a run between them.

It holds 3,325 lines (`wc -l` of its modules).
"""
