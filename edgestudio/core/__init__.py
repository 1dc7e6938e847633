"""Pure-Python core: model documents, summaries, recipes and reports. Never imports Qt."""
