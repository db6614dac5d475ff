"""A round's questions as they are asked: what identifies a question and the policy it keeps
(`asking.py`), a server's input requests parsed into questions (`input_requests.py`), and a call that
ends at its round: at a round of the console's own (`ended.py`) or one nobody can answer (`abandon.py`)."""
