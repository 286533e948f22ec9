"""fxls: FX traceability diagnostics for PyTorch models, in the editor and in CI."""

__version__ = "0.1.0"
