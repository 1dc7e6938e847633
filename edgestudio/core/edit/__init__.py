"""Model surgery: extract, rename, add outputs, bypass, simplify — each checked."""
