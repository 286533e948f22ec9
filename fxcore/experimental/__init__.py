"""Tracing aids outside torch.fx's core API (``fxcore.experimental.rewriter``)."""
