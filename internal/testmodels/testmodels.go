// Package testmodels writes PEPA models for tests and benchmarks. It imports
// nothing of the project, so every package's tests can use it.
package testmodels

import (
	"fmt"
	"strings"
)

// Mapping writes a mapping model in the seed's shape: apps passive
// applications dealt round-robin onto machines (application i to machine
// (i-1) mod machines + 1), each machine racing an ideal path (rates r<i>) and
// a perturbed one (p<i>) through its applications. Rates are made up but
// deterministic: r<i> = base + (i mod 7) step, p<i> = pbase + (i mod 5) pstep,
// with (base, step, pbase, pstep) = (0.1, 0.05, 0.08, 0.04) scaled by scale.
func Mapping(apps, machines int, scale float64) string {
	var b strings.Builder
	b.WriteString("// generated mapping model\n")
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.4g; p%d = %.4g;\n", i, scale*(0.1+float64(i%7)*0.05), i, scale*(0.08+float64(i%5)*0.04))
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
	as, acts, ms := make([]string, apps), make([]string, apps), make([]string, machines)
	for i := range as {
		as[i] = fmt.Sprintf("A%d", i+1)
		acts[i] = fmt.Sprintf("compute%d", i+1)
	}
	for m := range ms {
		ms[m] = fmt.Sprintf("M%d", m+1)
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(as, " <> "), strings.Join(acts, ", "), strings.Join(ms, " <> "))
	return b.String()
}

// LastActions are the cycle-closing actions of each machine of Mapping:
// the last application dealt to it.
func LastActions(apps, machines int) [][]string {
	out := make([][]string, machines)
	for m := 1; m <= machines; m++ {
		last := m
		for i := m; i <= apps; i += machines {
			last = i
		}
		out[m-1] = []string{fmt.Sprintf("compute%d", last)}
	}
	return out
}

// Workstations writes a general (not mapping-shaped) model: clusters of
// workstations, cluster k an aggregated array of sizes[k] copies that think,
// wait for their cluster's two-state file server and fail, with one
// repairman shared by every cluster. Its state count is the product over
// clusters of C(n+2, 2) * 2 (the server's states), except the last
// cluster's server, which has one state: sizes 7, 5, 4, 4 give
// 36 * 21 * 15 * 15 * 8 = 1,360,800 states.
func Workstations(sizes ...int) string {
	var b strings.Builder
	b.WriteString("// generated workstation clusters\nthink = 0.5; serve = 2.0; flush = 1.5; fail = 0.01; repair = 1.0;\n")
	var parts []string
	for k := range sizes {
		c := k + 1
		fmt.Fprintf(&b, "Ws%d = (req%d, think).Wait%d + (fail%d, fail).Down%d;\n", c, c, c, c, c)
		fmt.Fprintf(&b, "Wait%d = (serve%d, infty).Ws%d;\n", c, c, c)
		fmt.Fprintf(&b, "Down%d = (repair, infty).Ws%d;\n", c, c)
		if k < len(sizes)-1 {
			fmt.Fprintf(&b, "Srv%d = (serve%d, serve).Flush%d;\nFlush%d = (flush%d, flush).Srv%d;\n", c, c, c, c, c, c)
		} else {
			fmt.Fprintf(&b, "Srv%d = (serve%d, serve).Srv%d;\n", c, c, c)
		}
		parts = append(parts, fmt.Sprintf("(Ws%d[%d] <serve%d> Srv%d)", c, sizes[k], c, c))
	}
	b.WriteString("Repairman = (repair, repair).Repairman;\n")
	fmt.Fprintf(&b, "(%s) <repair> Repairman\n", strings.Join(parts, " <> "))
	return b.String()
}
