"""The experiment: its YAML file read safely, validated against the families and the space, and the errors that
name file and field."""
