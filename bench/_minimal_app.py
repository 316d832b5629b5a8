"""The reference for bench/startup.py: the smallest Textual app, one Static."""

from textual.app import App, ComposeResult
from textual.widgets import Static


class MinimalApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("minimal textual app")


if __name__ == "__main__":
    MinimalApp().run()
