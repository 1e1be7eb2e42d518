"""Mill's built-in task library (installed as ``mill.tasks``): one small module per benchmark."""
