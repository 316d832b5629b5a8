"""Changes that can be tried: applied under a guardian that rolls them back by itself
unless they are confirmed in time (``--try``, ``zsn confirm|pending|rollback``).

- `undo`: what a change must put back, as data (`Undo`), and who carries it out;
- `restores`: the restorers of files, sysctls, firewall rules, units and routes;
- `store`: the pending changes under ``/run/zsn/changes/``;
- `params`: the typed parameters of undos (records hold data, never programs);
- `guardian`: the process (a transient systemd unit, or a detached process) that
  rolls back at the deadline;
- `lifecycle`: begin, confirm, roll back;
- `session`: the SSH session's path, and the gate every live change passes;
- `cli`: ``zsn confirm``, ``zsn pending``, ``zsn rollback``.
"""
