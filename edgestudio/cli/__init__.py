"""The ``edgestudio`` command line: one module per subcommand, never imports Qt."""
