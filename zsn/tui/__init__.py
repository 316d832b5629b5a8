"""The Textual face of zsn. Only this package imports Textual."""
