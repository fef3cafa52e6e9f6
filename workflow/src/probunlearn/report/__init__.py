"""The paper's tables, figures and claims, assembled from a run's artifacts."""
