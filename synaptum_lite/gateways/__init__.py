"""Where model calls go: an OpenAI-compatible server over HTTP, and the Axonium platform.

It holds 2,211 lines (`wc -l` of its modules).
"""
