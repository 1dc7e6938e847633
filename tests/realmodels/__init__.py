"""Real pretrained models from public packages: the corpus, its fetch script and ``make realcheck``."""
