package randmodel

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
)

// NonDedicated writes a mapping model of the non-dedicated kind at real
// time scales: one to three machines whose applications' work is Erlang
// (one to three phases, jobs of hundreds to thousands of seconds), most
// with an owner written into the machine (jobs arriving and served in one
// to six phases, capacity one or two; preemptive, or sharing the
// processor equally), some staging each application's input through a
// network that fails when idle and is repaired in one to five phases.
// Rates spread over up to 10^7: the chains, with finished machines
// stopped, are stiff and have cycles (an owner's, the network's failures),
// many of them with complex eigenvalues (a cycle of three states or
// more: owner jobs in two phases, repairs in two). The product of the
// machines' and the network's local state counts is at most maxStates
// (resampled until it is), so the reference's stiff oracles can solve
// the chain.
func NonDedicated(seed int64, maxStates int) Model {
	r := rand.New(rand.NewSource(seed))
	for {
		m, prod := nonDedicated(r)
		if prod <= maxStates {
			m.Seed = seed
			return m
		}
	}
}

// logUniform draws from [lo, hi] uniformly in the logarithm, to three
// significant digits.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	return roundSig(lo*math.Pow(hi/lo, r.Float64()), 3)
}

func nonDedicated(r *rand.Rand) (Model, int) {
	feats := map[string]bool{}
	var b strings.Builder
	// Half the models are two or three machines staging over a network
	// (each with one application, to keep the product small).
	nm := 1 + r.Intn(3)
	withNet := r.Intn(2) == 0
	if withNet {
		nm = 2 + r.Intn(2)
	}
	var appTerms, computes, machTerms, stagings []string
	var m Model
	m.Family = "nondedicated"
	prod := 1
	napp := 0
	for j := 1; j <= nm; j++ {
		name := fmt.Sprintf("M%d", j)
		stage := withNet && (j <= 2 || r.Intn(2) == 0)
		// The owner: states 0..c (jobs present) with service in one
		// phase, or idle and the k phases of one job's service (capacity
		// one, k from 2 to 6: a cycle of k+1 states, whose eigenvalues
		// lie up to about 90 - 180/(k+1) degrees from the negative real
		// axis).
		owner := r.Intn(4) > 0
		phases2 := owner && r.Intn(2) == 0
		k := 0
		if phases2 {
			k = 2 + r.Intn(5)
		}
		capacity := 0
		if owner {
			capacity = 1
			if !phases2 && r.Intn(2) == 0 {
				capacity = 2
			}
			feats["owner"] = true
		}
		sharing := owner && r.Intn(2) == 0
		if sharing {
			feats["sharing"] = true
		} else if owner {
			feats["preemptive"] = true
		}
		if phases2 {
			feats["owner-phases"] = true
		}
		ownerStates := 1
		switch {
		case phases2:
			ownerStates = 1 + k
		case owner:
			ownerStates = 1 + capacity
		}
		// Owners as slow as the jobs (their cycles' poles then matter at
		// the goal) to thousands of times faster.
		arrive := logUniform(r, 1e-4, 10)
		serve := logUniform(r, 1e-3, 1000)
		// speed of the work with the owner in state o.
		speed := func(o int) float64 {
			if o == 0 {
				return 1
			}
			if !sharing {
				return 0
			}
			jobs := o
			if phases2 {
				jobs = 1
			}
			return 1 / float64(jobs+1)
		}
		// ownerMoves lists the owner's transitions from state o: (action,
		// rate, next).
		type move struct {
			act  string
			rate float64
			next int
		}
		ownerMoves := func(o int) []move {
			if !owner {
				return nil
			}
			var mv []move
			switch {
			case phases2:
				switch {
				case o == 0:
					mv = append(mv, move{"arrive_" + name, arrive, 1})
				case o < k:
					mv = append(mv, move{fmt.Sprintf("serve%d_%s", o, name), float64(k) * serve, o + 1})
				default:
					mv = append(mv, move{fmt.Sprintf("serve%d_%s", o, name), float64(k) * serve, 0})
				}
			default:
				if o < capacity {
					mv = append(mv, move{"arrive_" + name, arrive, o + 1})
				}
				if o > 0 {
					mv = append(mv, move{"leave_" + name, serve, o - 1})
				}
			}
			return mv
		}
		// The machine's progress: per branch, per application, the
		// request and transfer (when staging) and the work's phases.
		type step struct {
			act  string
			rate float64
			work bool // slowed or stopped by the owner
		}
		napps := 1 + r.Intn(2)
		if stage {
			napps = 1
		}
		var mine []int
		for a := 0; a < napps; a++ {
			napp++
			mine = append(mine, napp)
			appTerms = append(appTerms, fmt.Sprintf("A%d", napp))
			computes = append(computes, fmt.Sprintf("compute%d", napp))
			fmt.Fprintf(&b, "A%d = (compute%d, infty).A%d;\n", napp, napp, napp)
		}
		// Per application: its phases, its mean (the perturbed branch's
		// up to half as long again) and its transfer's rates.
		phases, means, reqs, xfers := make([]int, len(mine)), make([]float64, len(mine)), make([]float64, len(mine)), make([]float64, len(mine))
		for i := range mine {
			phases[i], means[i] = 1+r.Intn(3), logUniform(r, 200, 5000)
			reqs[i], xfers[i] = logUniform(r, 100, 1e4), logUniform(r, 10, 1e4)
			if phases[i] > 1 {
				feats["erlang-work"] = true
			}
		}
		var branches [][]step
		for br := 0; br < 2; br++ {
			var steps []step
			for i, a := range mine {
				if stage {
					steps = append(steps, step{fmt.Sprintf("req%d", j), reqs[i], false},
						step{fmt.Sprintf("xfer%d", j), xfers[i], false})
					feats["staging"] = true
				}
				k := phases[i]
				mean := means[i]
				if br == 1 {
					mean = roundSig(mean*(1+r.Float64()/2), 3)
				}
				for p := 1; p <= k; p++ {
					act := fmt.Sprintf("w%d_%d", a, p)
					if p == k {
						act = fmt.Sprintf("compute%d", a)
					}
					steps = append(steps, step{act, roundSig(float64(k)/mean, 3), true})
				}
			}
			branches = append(branches, steps)
		}
		// Local states: the start (branch not yet taken) is progress 0 of
		// branch 0's first step; each branch's step i >= 1 a state of its
		// own. Names: M (start, owner 0), M_b<br>_<i>_o<o>.
		state := func(br, i, o int) string {
			if i == 0 {
				if o == 0 {
					return name
				}
				return fmt.Sprintf("%s_s_o%d", name, o)
			}
			return fmt.Sprintf("%s_b%d_%d_o%d", name, br, i, o)
		}
		n := len(branches[0])
		for o := 0; o < ownerStates; o++ {
			// The start: both branches race on their first step.
			var alts []string
			for br := 0; br < 2; br++ {
				st := branches[br][0]
				if rate := st.rate * speedIf(st.work, speed(o)); rate > 0 {
					alts = append(alts, fmt.Sprintf("(%s, %s).%s", st.act, num(roundSig(rate, 6)), next(state, br, 1, n, o)))
				}
			}
			for _, mv := range ownerMoves(o) {
				alts = append(alts, fmt.Sprintf("(%s, %s).%s", mv.act, num(mv.rate), state(0, 0, mv.next)))
			}
			fmt.Fprintf(&b, "%s = %s;\n", state(0, 0, o), strings.Join(alts, " + "))
			for br := 0; br < 2; br++ {
				for i := 1; i < n; i++ {
					var alts []string
					st := branches[br][i]
					if rate := st.rate * speedIf(st.work, speed(o)); rate > 0 {
						alts = append(alts, fmt.Sprintf("(%s, %s).%s", st.act, num(roundSig(rate, 6)), next(state, br, i+1, n, o)))
					}
					for _, mv := range ownerMoves(o) {
						alts = append(alts, fmt.Sprintf("(%s, %s).%s", mv.act, num(mv.rate), state(br, i, mv.next)))
					}
					fmt.Fprintf(&b, "%s = %s;\n", state(br, i, o), strings.Join(alts, " + "))
				}
			}
		}
		prod *= ownerStates * (1 + 2*(n-1))
		machTerms = append(machTerms, name)
		if stage {
			stagings = append(stagings, fmt.Sprintf("req%d", j), fmt.Sprintf("xfer%d", j))
		}
		m.Machines = append(m.Machines, name)
		m.Cycles = append(m.Cycles, []string{fmt.Sprintf("compute%d", mine[len(mine)-1])})
		m.FirstActions = append(m.FirstActions, []string{branches[0][0].act})
	}
	system := strings.Join(machTerms, " <> ")
	if len(stagings) > 0 {
		// The network: one transfer at a time; it fails when idle and is
		// repaired in one to five phases.
		var serveAlts []string
		for k := 0; k < len(stagings); k += 2 {
			j := stagings[k][len("req"):]
			serveAlts = append(serveAlts, fmt.Sprintf("(req%s, infty).Net_%s", j, j))
			fmt.Fprintf(&b, "Net_%s = (xfer%s, infty).Net;\n", j, j)
		}
		states := 1 + len(stagings)/2
		if r.Intn(3) > 0 {
			repairs := 1 + r.Intn(5)
			serveAlts = append(serveAlts, fmt.Sprintf("(fail, %s).Down1", num(logUniform(r, 0.001, 1))))
			rep := logUniform(r, 1, 1000)
			for p := 1; p <= repairs; p++ {
				nextState := fmt.Sprintf("Down%d", p+1)
				if p == repairs {
					nextState = "Net"
				}
				fmt.Fprintf(&b, "Down%d = (repair%d, %s).%s;\n", p, p, num(roundSig(float64(repairs)*rep, 6)), nextState)
			}
			states += repairs
			feats["failing-network"] = true
			if repairs > 1 {
				feats["repair-phases"] = true
			}
		}
		fmt.Fprintf(&b, "Net = %s;\n", strings.Join(serveAlts, " + "))
		system = fmt.Sprintf("(%s) <%s> Net", system, strings.Join(stagings, ", "))
		prod *= states
	}
	fmt.Fprintf(&b, "(%s) <%s> (%s)\n", strings.Join(appTerms, " <> "), strings.Join(computes, ", "), system)
	m.Source = b.String()
	for f := range feats {
		m.Features = append(m.Features, f)
	}
	sort.Strings(m.Features)
	return m, prod
}

// speedIf is speed for a step of work, 1 for another (a transfer goes on
// while an owner job is at the processor).
func speedIf(work bool, speed float64) float64 {
	if work {
		return speed
	}
	return 1
}

// next is the state after step i-1 of branch br (i = n: the cycle closes,
// back to the start with the owner as it is).
func next(state func(br, i, o int) string, br, i, n, o int) string {
	if i == n {
		return state(0, 0, o)
	}
	return state(br, i, o)
}
