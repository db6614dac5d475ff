"""Notifications: who must learn of what, durably delivered (an outbox row per delivery)."""
