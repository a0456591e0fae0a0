package lang

import (
	"fmt"
	"strings"
)

// mappingModel writes a model in the seed's shape: apps passive applications
// dealt round-robin onto machines, each machine racing an ideal and a
// perturbed branch. Rates are made up but deterministic.
func mappingModel(apps, machines int) string {
	var b strings.Builder
	b.WriteString("// generated mapping model\n")
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.3f; p%d = %.3f;\n", i, 0.1+float64(i%7)*0.05, i, 0.08+float64(i%5)*0.04)
	}
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "A%d = (compute%d, infty).A%d;\n", i, i, i)
	}
	for m := 1; m <= machines; m++ {
		var ideal, pert strings.Builder
		for i := m; i <= apps; i += machines {
			fmt.Fprintf(&ideal, "(compute%d, r%d).", i, i)
			fmt.Fprintf(&pert, "(compute%d, p%d).", i, i)
		}
		fmt.Fprintf(&b, "M%d = %sM%d + %sM%d;\n", m, ideal.String(), m, pert.String(), m)
	}
	b.WriteString("(")
	for i := 1; i <= apps; i++ {
		if i > 1 {
			b.WriteString(" <> ")
		}
		fmt.Fprintf(&b, "A%d", i)
	}
	b.WriteString(") <")
	for i := 1; i <= apps; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "compute%d", i)
	}
	b.WriteString("> (")
	for m := 1; m <= machines; m++ {
		if m > 1 {
			b.WriteString(" <> ")
		}
		fmt.Fprintf(&b, "M%d", m)
	}
	b.WriteString(")\n")
	return b.String()
}
