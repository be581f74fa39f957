"""Pure builders of the databases' objects: the topology charts' values, names, sizes."""
