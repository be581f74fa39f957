"""The databases under test: deployed, set up through the drivers, removed."""
