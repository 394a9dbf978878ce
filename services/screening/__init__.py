"""The screening stage and its conversation memory."""

from services.screening.memory import ConversationMemory, MemoryLimits, value_hash
from services.screening.stage import VALUE_CATEGORIES, Screened, Screener, screen

__all__ = [
    "VALUE_CATEGORIES",
    "ConversationMemory",
    "MemoryLimits",
    "Screened",
    "Screener",
    "screen",
    "value_hash",
]
