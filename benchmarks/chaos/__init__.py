"""The chaos test: console processes killed under load, and what must hold afterwards (`make chaos`)."""
