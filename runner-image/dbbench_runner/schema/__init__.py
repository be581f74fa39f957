"""Tables, collections and statements per engine and shape (pure builders)."""
