"""The names the tool writes: configuration keys and the names of the files and folders it makes."""
