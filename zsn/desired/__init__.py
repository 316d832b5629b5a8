"""The desired state: a YAML file that says how the machine should be (``zsn apply``),
and the file that says how it is (``zsn state export``). docs/state.md is its reference.

A face over the domains' own plans, as the TUI and the commands are: `document` reads
the file into each domain's declared section type (through `zsn.decode`: strict,
bounded, a key no section declares refused), `plan` asks each domain's ``desired``
face for its plans, builds each on the files the ones before it write
(`zsn.system.files.staged`) and makes them one `zsn.plan.Plan` (`zsn.plan.combined`),
so every rule of a single command holds: byte-exact edits, refusals before anything
changes, verify after apply, ``--try``. `cli` is ``zsn apply`` and ``zsn state``.
"""
