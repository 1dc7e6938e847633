"""Purpose-made jobs that end in every outcome the job system knows (``edgestudio --self-test``)."""
