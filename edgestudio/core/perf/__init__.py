"""Latency: bench and profile recipes and jobs, statistics, providers, edge vs cloud, results."""
