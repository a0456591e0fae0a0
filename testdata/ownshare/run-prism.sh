#!/bin/sh
# The PRISM side of the comparison in prism-results.txt (PRISM 4.10):
# transient properties by uniformization (Fox-Glynn accepts 1e-9 at the
# least here), expected times by Gauss-Seidel. PRISM=path/to/prism.
P=${PRISM:-prism}
cd "$(dirname "$0")"
for m in a b c; do
  $P $m.sm $m.props -prop 1,3,5 -sparse -epsilon 1e-9
  $P $m.sm $m.props -prop 2,4,6 -sparse -gs -epsilon 1e-12 -maxiters 100000000
done
