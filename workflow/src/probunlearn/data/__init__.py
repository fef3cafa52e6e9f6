"""Data: the one row format, eval-set names, prompt encoding, the synthetic world, loaders and downloads."""
