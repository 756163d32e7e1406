"""Where journals are kept: memory, SQLite, PostgreSQL, and moving a run between them.

It holds 2,569 lines (`wc -l` of its modules).
"""
