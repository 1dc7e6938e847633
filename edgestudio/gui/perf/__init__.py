"""Performance views: the benchmark and profile tab, time against work, target devices."""
