"""Maintainer tools for the executable docs. Not part of the `synaptum_lite` package."""
