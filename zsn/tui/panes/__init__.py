"""One pane per domain; `zsn.domains` names each domain's pane and the tab order."""
