"""Target devices reached over SSH: their list, the link, and the runner that measures there."""
