"""Shared rewrites. Rules decide *whether* a rewrite is legal; these decide *how*."""
