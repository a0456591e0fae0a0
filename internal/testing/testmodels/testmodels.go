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

// Store is Mapping with a one-slot result store that every machine's
// cycle-closing action must pass through (it then flushes at rate 2): the
// machines are no longer independent, and the leaf tables do not apply.
func Store(apps, machines int) string {
	src := Mapping(apps, machines, 1)
	lines := strings.Split(strings.TrimSpace(src), "\n")
	system := lines[len(lines)-1]
	var lasts, alts []string
	for _, l := range LastActions(apps, machines) {
		lasts = append(lasts, l[0])
		alts = append(alts, fmt.Sprintf("(%s, infty).Flush", l[0]))
	}
	body := strings.Join(lines[:len(lines)-1], "\n")
	return fmt.Sprintf("%s\nStore = %s;\nFlush = (flush, 2.0).Store;\n(%s) <%s> Store\n", body, strings.Join(alts, " + "), system, strings.Join(lasts, ", "))
}

// Networked is Mapping with networks that stage the machines' input: nets
// lists, per network, the machines (1-based) that share it. A machine j on
// a network starts each of its two paths with its own transfer (xfer<j>,
// 2.0), which the network serves one at a time at rate speed:
//
//	Net<k> = (xfer<j>, infty).(sent<k>, speed).Net<k> + ...
//
// so the machines of one network are coupled (issue 23's models); the
// others are as in Mapping.
func Networked(apps, machines int, nets [][]int, speed float64) string {
	var b strings.Builder
	b.WriteString("// generated mapping model with shared networks\n")
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "r%d = %.4g; p%d = %.4g;\n", i, 0.1+float64(i%7)*0.05, i, 0.08+float64(i%5)*0.04)
	}
	fmt.Fprintf(&b, "s = %g;\n", speed)
	for i := 1; i <= apps; i++ {
		fmt.Fprintf(&b, "A%d = (compute%d, infty).A%d;\n", i, i, i)
	}
	onNet := map[int]bool{}
	for _, ms := range nets {
		for _, m := range ms {
			onNet[m] = true
		}
	}
	for m := 1; m <= machines; m++ {
		var ideal, pert strings.Builder
		if onNet[m] {
			fmt.Fprintf(&ideal, "(xfer%d, 2.0).", m)
			fmt.Fprintf(&pert, "(xfer%d, 2.0).", m)
		}
		for i := m; i <= apps; i += machines {
			fmt.Fprintf(&ideal, "(compute%d, r%d).", i, i)
			fmt.Fprintf(&pert, "(compute%d, p%d).", i, i)
		}
		fmt.Fprintf(&b, "M%d = %sM%d + %sM%d;\n", m, ideal.String(), m, pert.String(), m)
	}
	var netTerms, xfers []string
	for k, ms := range nets {
		var alts []string
		for _, m := range ms {
			alts = append(alts, fmt.Sprintf("(xfer%d, infty).(sent%d, s).Net%d", m, k+1, k+1))
			xfers = append(xfers, fmt.Sprintf("xfer%d", m))
		}
		fmt.Fprintf(&b, "Net%d = %s;\n", k+1, strings.Join(alts, " + "))
		netTerms = append(netTerms, fmt.Sprintf("Net%d", k+1))
	}
	as, acts, ms := make([]string, apps), make([]string, apps), make([]string, machines)
	for i := range as {
		as[i] = fmt.Sprintf("A%d", i+1)
		acts[i] = fmt.Sprintf("compute%d", i+1)
	}
	for m := range ms {
		ms[m] = fmt.Sprintf("M%d", m+1)
	}
	system := strings.Join(ms, " <> ")
	if len(nets) > 0 {
		system = fmt.Sprintf("(%s) <%s> (%s)", system, strings.Join(xfers, ", "), strings.Join(netTerms, " <> "))
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(as, " <> "), strings.Join(acts, ", "), system)
	return b.String()
}

// Pairs lists the networks of machines 1..machines taken two at a time
// (a last machine alone gets its own), for Networked.
func Pairs(machines int) [][]int {
	var out [][]int
	for m := 1; m <= machines; m += 2 {
		if m+1 <= machines {
			out = append(out, []int{m, m + 1})
		} else {
			out = append(out, []int{m})
		}
	}
	return out
}

// Storage writes a general model in the shape of the PEPA Eclipse Plug-in's
// state-space exploration models ws-S-B-W-R (its own names and rates): a
// pool of servers, each of which serves reads, fails and writes back a
// buffer, cooperating on flushes and on a global recovery; a failure
// counter over the pool that recovers everything once every server has
// failed; a write buffer of capacity buffer that the writers fill and a
// flush empties; writers and readers that a global reset returns to their
// start. Every component is written out (no array), so none is
// aggregated: servers, buffer, writers, readers = 6, 5, 4, 4 give
// 1,369,728 states and 16,487,936 transitions, among 39,680,928 packed
// ones (the product of the local state counts).
func Storage(servers, buffer, writers, readers int) string {
	var b strings.Builder
	b.WriteString("// generated storage pool\n")
	b.WriteString("fail = 0.8; flush = 1.2; put = 0.9; get = 1.05; look = 0.85; mend = 2.5;\n")
	b.WriteString("slowFlush = 0.7; restart = 1.1; mendAll = 1.8;\n")
	b.WriteString("Node = (get, infty).NodeRead + (crash, fail).NodeDown + (flush, flush).Node;\n")
	b.WriteString("NodeRead = (look, look).Node;\n")
	b.WriteString("NodeDown = (mend, mend).Node + (mendAll, infty).Node + (flush, slowFlush).NodeDown;\n")
	for k := 0; k < servers; k++ {
		switch k {
		case 0:
			fmt.Fprintf(&b, "Down%d = (crash, infty).Down%d;\n", k, k+1)
		default:
			fmt.Fprintf(&b, "Down%d = (crash, infty).Down%d + (mend, infty).Down%d;\n", k, k+1, k-1)
		}
	}
	fmt.Fprintf(&b, "Down%d = (mendAll, mendAll).Down0;\n", servers)
	for k := 0; k < buffer; k++ {
		if k == 0 {
			fmt.Fprintf(&b, "Buf%d = (put, infty).Buf%d;\n", k, k+1)
		} else {
			fmt.Fprintf(&b, "Buf%d = (put, infty).Buf%d + (flush, infty).Buf0;\n", k, k+1)
		}
	}
	fmt.Fprintf(&b, "Buf%d = (flush, infty).Buf0;\n", buffer)
	b.WriteString("Writer = (put, put).WriterDone;\nWriterDone = (restart, infty).Writer;\n")
	b.WriteString("Reader = (get, get).ReaderWait;\nReaderWait = (look, infty).ReaderDone;\nReaderDone = (restart, infty).Reader;\n")
	b.WriteString("Reset = (restart, restart).Reset;\n")
	fmt.Fprintf(&b, "((%s <restart> (%s)) <restart> Reset)\n  <put, get, look>\n(((%s) <crash, mend, mendAll> Down0) <flush> Buf0)\n",
		strings.Join(repeat("Writer", writers), " <restart> "), strings.Join(repeat("Reader", readers), " <restart> "),
		strings.Join(repeat("Node", servers), " <flush, mendAll> "))
	return b.String()
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
