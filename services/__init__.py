"""Vigil runtime: stream processors, rule engine, checks, metrics, review, eval-sets, CLI."""
