"""Controller: metadata log, broker registration, leader election, ISR commits."""
