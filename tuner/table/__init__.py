"""A kernel table: a workload of shapes as input, the winners of tuning runs per shape and dtype kept in a
versioned folder, a configuration predicted for shapes the runs never tuned, and the table exported as plain CUDA."""
