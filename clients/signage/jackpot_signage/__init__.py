"""Floor signage for jackpotd: a kiosk web page per link, fed by one WatchPools stream per link."""
