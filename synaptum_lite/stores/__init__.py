"""Where journals are kept: memory, SQLite, PostgreSQL, and moving a run between them.

It holds 2,577 lines (`wc -l` of its modules).
"""
