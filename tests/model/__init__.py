"""gpumem.model's tests (a package: its files may share names with tests/)."""
