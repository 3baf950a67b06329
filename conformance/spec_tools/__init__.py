"""The spec as data: requirement ids traced to checkers, tests and TLA+ properties, TLC runs, and the static site."""
