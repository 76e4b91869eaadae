"""Table controller client for jackpotd: a durable outbox, retries, the meter, and a table simulator."""

from .controller import ControllerConfig, TableController
from .outbox import Outbox

__all__ = ["ControllerConfig", "Outbox", "TableController"]
