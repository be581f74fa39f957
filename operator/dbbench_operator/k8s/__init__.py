"""The Kubernetes API (the one client), ownership of children, why pods wait."""
