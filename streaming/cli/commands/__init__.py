"""Sub-commands of the `groupscope` CLI: one module each, discovered by `streaming.cli.main`."""
