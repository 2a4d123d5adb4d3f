"""Judge evaluation (``j1 eval`` / ``j1 score``): benchmark loaders, the runner, metrics and reports."""
