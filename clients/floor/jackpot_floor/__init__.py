"""`jackpot-floor`: the floor supervisor's CLI, and the floor's calls to jackpotd that the web console shares."""
