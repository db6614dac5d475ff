"""Gates: a call the team's policy gates waits at round 0 for approval (`opening.py`); the gate decided,
with an edit of the arguments held to the rules it falls under (`deciding.py`)."""
