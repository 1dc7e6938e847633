"""Forms that edit a job recipe (one per job kind)."""
