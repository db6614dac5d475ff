"""Read models and reports: what pages and exports show, filtered by who is looking."""
