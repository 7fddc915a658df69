-- Fresh planner statistics after the bulk seed, so every profile starts from the same plans.
ANALYZE;
