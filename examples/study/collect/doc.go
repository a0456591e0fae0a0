// Command collect gathers the rows of a robustness study (examples/study:
// one `pepa robustness --format csv --summary` file per instance, its
// models under out/CLASS/INSTANCE/models/) into one CSV, draws robustness
// against expected makespan for every mapping of every instance, and
// answers the study's question: among mappings of equal expected makespan
// (within -tie), how often, and by how much, does robustness differ?
//
//	collect -tie 0.01 -o results.csv -plot robustness-makespan.png -summary summary.txt ROWS.csv...
package main
