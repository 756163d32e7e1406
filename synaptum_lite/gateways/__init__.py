"""Where model calls go: an OpenAI-compatible server over HTTP, and the Axonium platform.

It holds 1,555 lines (`wc -l` of its modules).
"""
