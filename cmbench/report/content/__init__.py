"""What a report shows, as data: the page records built from the cubes, one module per kind of page."""
