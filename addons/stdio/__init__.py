"""The stdio capture: the tee (`mcptap record`), the server it runs, and its recorder process."""
