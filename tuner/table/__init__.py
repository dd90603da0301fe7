"""A kernel table: a workload of shapes as input, the winners of tuning runs per shape and dtype kept in a
versioned folder, and a configuration predicted for shapes the runs never tuned."""
