"""Running one experiment: build everything from the config, evaluate, write the folder."""
