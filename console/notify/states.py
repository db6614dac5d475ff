"""The notification outbox's states and the tables of how its rows may move between them."""

from __future__ import annotations

from enum import StrEnum

from console.transitions import Moves


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # due at its not_before; each attempt pushes it later
    SENT = "sent"
    FAILED = "failed"  # its give_up_at passed; an admin may queue it again
    DROPPED = "dropped"  # a reminder of a question answered before it was due


DELIVERIES = Moves(
    "delivery",
    DeliveryStatus.PENDING,
    {
        DeliveryStatus.PENDING: frozenset(
            {DeliveryStatus.SENT, DeliveryStatus.FAILED, DeliveryStatus.DROPPED}
        ),
        DeliveryStatus.FAILED: frozenset({DeliveryStatus.PENDING}),
        DeliveryStatus.SENT: frozenset(),
        DeliveryStatus.DROPPED: frozenset(),
    },
)


class NoticeStatus(StrEnum):
    PENDING = "pending"  # due at its not_before
    EXPANDED = "expanded"  # turned into its deliveries


NOTICES = Moves(
    "notice",
    NoticeStatus.PENDING,
    {NoticeStatus.PENDING: frozenset({NoticeStatus.EXPANDED}), NoticeStatus.EXPANDED: frozenset()},
)
