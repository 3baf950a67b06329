"""``kconform bench``: speed goals measured as ratios in one run."""
