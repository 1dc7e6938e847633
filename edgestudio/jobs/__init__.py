"""Process isolation for jobs: protocol, worker (child main) and runner (parent side)."""
