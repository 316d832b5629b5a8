"""A lab of real daemons in network namespaces, built and torn down by the tests themselves."""
