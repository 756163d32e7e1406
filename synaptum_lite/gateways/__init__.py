"""Where model calls go: an OpenAI-compatible server over HTTP, and the Axonium platform."""
