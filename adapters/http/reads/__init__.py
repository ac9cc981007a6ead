"""What the handlers read through: the read models as the API role, with read-your-writes,
pages and downloads."""
