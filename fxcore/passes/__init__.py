"""Graph passes shipped with fxcore (torch.fx.passes layout)."""
