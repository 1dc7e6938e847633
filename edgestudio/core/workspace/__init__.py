"""The open model as a document, saved as a workspace, rendered as a report."""
