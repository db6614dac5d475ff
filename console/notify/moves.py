"""The only way a delivery's status changes, following its table in `console/notify/states.py`."""

from __future__ import annotations

from console.notify.models import Delivery
from console.notify.states import DELIVERIES, DeliveryStatus


def move_delivery(delivery: Delivery, new: DeliveryStatus) -> None:
    """Set the delivery's status to `new`; IllegalMove if its table does not allow it."""
    DELIVERIES.move(delivery, new)
