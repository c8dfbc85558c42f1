"""The project as a whole: the house's layout, the README's promises, the plain install without
extras, a newer Python."""
