"""Benchmarks: synaptum_lite side by side with what users would otherwise pick.

`python -m benchmarks.run` runs them all and generates docs/rendimiento.md. Importing this
package imports nothing: its drivers run under other interpreters too.
"""
