"""jackpotd: the linked progressive jackpot service."""
