"""What a pass records in the run's status and Events (pure)."""
