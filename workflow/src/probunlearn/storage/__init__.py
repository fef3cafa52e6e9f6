"""Files on disk and on the hub: the one atomic writer, one hub file, what a checkpoint is."""
