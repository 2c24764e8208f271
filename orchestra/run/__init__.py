"""Running a benchmark: the driver below the command line (`Run`), its preflight and the scope it works on."""
