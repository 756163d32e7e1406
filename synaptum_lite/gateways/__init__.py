"""Where model calls go: an OpenAI-compatible server over HTTP, and the Axonium platform.

It holds 1,740 lines (`wc -l` of its modules).
"""
