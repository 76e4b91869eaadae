"""jackpot-math (issue 24): the math certificate of a link's configuration, from jackpotd's own rules engine."""
