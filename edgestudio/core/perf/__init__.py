"""Benchmarks and profiles: recipes, statistics, providers, edge vs cloud."""
