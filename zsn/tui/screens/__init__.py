"""Modal screens: details, help, forms, confirmations."""
