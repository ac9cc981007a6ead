"""Document rendering: a report's Markdown as a PDF (ReportLab)."""
