"""jackpot-math (issue 24): a link configuration's math certificate (exact odds and return, long-run figures, a
seeded simulation) as JSON, a self-contained HTML page and a terminal summary."""
