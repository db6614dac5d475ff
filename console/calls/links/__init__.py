"""URL-mode links: judging a link before a person opens it (`inspection.py`), and the links a server
requires before it serves a call (-32042, `required.py`)."""
