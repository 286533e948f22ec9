"""The user's project as fxls reads it: its files (found and read with a bound), their
Python source and text positions, and its settings (pyproject.toml, the editor's)."""
