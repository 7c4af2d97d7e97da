"""How a report is drawn: the PDF (matplotlib, page cache, process pool) and the HTML (plotly)."""
