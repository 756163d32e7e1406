"""Where model calls go: an OpenAI-compatible server over HTTP, and the Axonium platform.

It holds 1,717 lines (`wc -l` of its modules).
"""
