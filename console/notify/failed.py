"""A delivery attempt that did not get through."""


class DeliveryFailed(Exception):
    """Not delivered this time; the text says why (never a secret). `final`: trying again cannot help."""

    def __init__(self, reason: str, *, final: bool = False) -> None:
        super().__init__(reason)
        self.final = final
