"""Answering questions: who may answer, decisions and co-signatures, expiry (`decisions.py`); the inbox
(`inbox.py`) and whom a waiting call waits for (`waiting.py`); answers from the question page, the call's
agent and a person's connect (`page_answers.py`, `agent_answers.py`, `connected.py`); a sampling
question's reply (`sampling.py`)."""
