"""MUSE-News (Shi et al. 2024): its eval sets, raw corpora and greedy metrics."""
