"""Metrics beyond the bounds: the per-token layer, TOFU's metrics, DCUE, membership inference, the long metrics table."""
