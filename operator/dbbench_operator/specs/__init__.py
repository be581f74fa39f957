"""Pure builders of what a run creates: plan, runner and cache-drop Jobs, Secrets, policies."""
