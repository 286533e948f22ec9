"""The weight initialisers a build skips, by name: the tables ``meta_build`` (meta-device
builds: nothing is initialised) and ``shape_build`` (builds for tracing: the expensive
initialisers are skipped) patch."""

from __future__ import annotations

#: module methods that only initialise weights (by name, as libraries and users write them)
INITIALISER_METHODS = (
    "_init_weights", "init_weights", "_initialize_weights", "initialize_weights",
    "reset_parameters", "_reset_parameters",
)
#: ``torch.nn.init`` functions
INIT_FUNCTIONS = (
    "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "orthogonal_", "sparse_",
)
#: the in-place random and arithmetic tensor methods initialisers are written with
FILL_METHODS = (
    "uniform_", "normal_", "erfinv_", "clamp_", "mul_", "add_", "fill_", "zero_", "copy_",
    "exponential_", "bernoulli_", "random_", "log_normal_", "cauchy_", "geometric_", "div_",
    "sub_",
)
#: the fills skipped on a parameter's memory in a build for tracing
PARAMETER_FILL_METHODS = (*FILL_METHODS, "clamp_min_", "clamp_max_", "fill_diagonal_")
