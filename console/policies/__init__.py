"""Approval policies: who may answer a team's questions, how many must agree, and by when."""
