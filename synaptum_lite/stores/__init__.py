"""Where journals are kept: memory, SQLite, PostgreSQL, and moving a run between them.

It holds 2,567 lines (`wc -l` of its modules).
"""
