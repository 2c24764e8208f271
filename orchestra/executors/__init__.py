"""Where trials run besides this process: the Ray executor (scale-out.md); `import ray` only here."""
