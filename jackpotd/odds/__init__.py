"""The math of a link's configuration (issue 24): exact hand odds, the jackpot wager's return, its long-run
figures and a seeded simulation of the link, all from the rules engine that pays the hits (jackpotd.domain)."""
