"""What a job is given and what it answers: the recipe base class, options declared once (CLI
flag, help, default, form row, equivalent command), the registry that rebuilds recipes in the
worker, and the job report."""
