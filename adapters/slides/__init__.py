"""Slide decks: rendering to PPTX, and previews and PDF export through LibreOffice."""
