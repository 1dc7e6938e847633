"""Smoke tests of the packaged desktop app (slow; run by `make package-test`)."""
