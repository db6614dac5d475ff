"""What a server reports while a request is out, kept on the call: its progress (`progress.py`) and log
messages (`logs.py`), together (`reports.py`), written at most once a second (`kept.py`)."""
