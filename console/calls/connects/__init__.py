"""Connects: a call parked behind a connect question while its owner connects their account at an
OAuth-protected server (`parking.py`), and the connect question decided (`deciding.py`). The callback that
accepts them is an answer like any other (`calls/questions/connected.py`)."""
