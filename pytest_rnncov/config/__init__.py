"""The option vocabulary the plugin and the command line share (numpy-free): coverage
bars, metric lists, report specs, seeds, and checks of the paths a run will write."""
