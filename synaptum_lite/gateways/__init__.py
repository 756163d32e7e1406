"""Where model calls go: an OpenAI-compatible server over HTTP (live, or recorded and replayed
with no server), and the Axonium platform.

It holds 2,240 lines (`wc -l` of its modules).
"""
