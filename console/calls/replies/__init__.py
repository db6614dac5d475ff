"""What a server answered, applied to the call: a result, another round, a restart or a failure
(`outcomes.py`); a result that ends the call, recorded with plain statements (`at_once.py`); a call its
server runs as a task (`tasks.py`). The dispatcher sends and hands each reply here."""
