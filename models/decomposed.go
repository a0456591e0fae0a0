package models

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"pepa/ctmc"
	"pepa/passage"
)

// AnalyzeParts computes the robustness of a mapping whose machines are
// independent parts (ctmc.Decompose): each machine's finishing time on its
// own small chain, in parallel on all cores, and the joint figures as
// products. The results equal Analyze's on the product chain (tests check
// it to 1e-12), at a cost proportional to the model, not to the product of
// the machines' state counts.
//
// Plug-in semantics on the product weights a source state s by
// pi(s) q(s), with q(s) the sum of every part's exit rate in s. With
// independent parts pi(s) = prod_k pi_k(s_k), so marginalising over the
// other parts gives machine j's start distribution
//
//	alpha_j(x) ∝ pi_j(x) (q_j(x) + sum_{k != j} qbar_k),  qbar_k = sum_y pi_k(y) q_k(y),
//
// over the states x entered by its first actions: the other parts enter
// only through their mean exit rates under their own steady states.
func AnalyzeParts(ctx context.Context, s *ctmc.Structure, parts []*ctmc.Part, opt Options) (*Result, error) {
	opt.defaults()
	machines, err := FindMachines(s, opt.Machines)
	if err != nil {
		return nil, err
	}
	partOf := map[*ctmc.Leaf]*ctmc.Part{}
	for _, p := range parts {
		partOf[p.Leaf] = p
	}
	res := &Result{Beta: opt.Beta, Semantics: opt.Semantics, Solved: "decomposed", Independent: true}
	res.Warnings = Uncomputed(s, machines)
	states, product := 0, 1.0
	for _, p := range parts {
		states += p.Chain.N
		product *= float64(p.Chain.N)
	}
	res.States, res.ProductStates = states, product

	// Plug-in weights need every part's steady state and mean exit rate.
	var qbar []float64
	var pis [][]float64
	sumQbar := 0.0
	if opt.Semantics == passage.Plugin {
		chains := make([]*ctmc.Chain, len(parts))
		for k, p := range parts {
			chains[k] = p.Chain
		}
		if pis, qbar, err = passage.PartRates(ctx, chains); err != nil {
			return nil, err
		}
		for _, x := range qbar {
			sumQbar += x
		}
	}
	partIndex := map[*ctmc.Part]int{}
	for k, p := range parts {
		partIndex[p] = k
	}

	// Every machine's passage first, then one uniformization rate for all
	// of them (so that the joint figures share Poisson weights): the
	// largest of the machines' own, which count target-labelled
	// self-loops (passage.UniformizationRate). A machine whose own rate
	// is far below it (stiffly different machines) keeps its own: the
	// shared one would multiply its steps by the ratio.
	res.Machines = make([]MachineResult, len(machines))
	probs := make([]*passage.Problem, len(machines))
	own := make([]float64, len(machines))
	q := 0.0
	for i, m := range machines {
		p := partOf[m.Leaf]
		if p == nil {
			return nil, fmt.Errorf("machine %s is not an independent part", m.Name)
		}
		c := p.Chain
		mr := &res.Machines[i]
		*mr = newMachineResult(m, s, opt.Pragmas)
		var pr passage.Problem
		if opt.Semantics == passage.Plugin {
			if sameSet(m.First, m.Last) {
				mr.Note = "its first and last actions are the same (one application), for which the plug-in semantics computes nothing; use --semantics initial"
				continue
			}
			k := partIndex[p]
			var err error
			if pr, err = passage.PluginPartProblem(c, pis[k], sumQbar-qbar[k], m.First, m.Last); err != nil {
				return nil, fmt.Errorf("machine %s: %w", m.Name, err)
			}
		} else {
			pr = passage.InitialProblem(c, m.Last)
			// Only this machine's own start matters on its part's chain.
			var own *Pragmas
			if d, ok := opt.Pragmas.initialOf(m.Name); ok {
				own = &Pragmas{Initial: map[string]map[string]float64{m.Name: d}}
			}
			alpha, err := initialDistribution(c, own)
			if err != nil {
				return nil, fmt.Errorf("machine %s: %w", m.Name, err)
			}
			if alpha != nil {
				pr.Alpha = alpha
			}
		}
		mr.alpha = pr.Alpha
		probs[i] = &pr
		own[i] = passage.UniformizationRate(c, []passage.Problem{pr})
		q = math.Max(q, own[i])
	}
	for i := range own {
		if own[i]*ownRateRatio >= q {
			own[i] = q
		}
	}

	err = parallel(ctx, len(machines), func(i int) error {
		pr := probs[i]
		if pr == nil {
			return nil
		}
		m := machines[i]
		c := partOf[m.Leaf].Chain
		mr := &res.Machines[i]
		rs, err := passage.Solve(ctx, c, []passage.Problem{*pr}, passage.Options{Epsilon: opt.Epsilon, Complete: true, Q: own[i]})
		if err != nil {
			return fmt.Errorf("machine %s: %w", m.Name, err)
		}
		mr.dist = rs[0]
		if mr.PByBeta, err = mr.dist.CDF(opt.Beta); err != nil {
			return err
		}
		if err := mr.setMean(ctx, c, *pr); err != nil {
			return err
		}
		mr.Quantile, err = mr.dist.Quantile(opt.Quantile)
		mr.Note = neverFinishes(mr)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Robustness = math.Inf(1)
	analysed := 0
	for i := range res.Machines {
		if mr := &res.Machines[i]; mr.dist != nil {
			res.Robustness = math.Min(res.Robustness, mr.PByBeta)
			analysed++
		}
	}
	if analysed == 0 {
		return nil, fmt.Errorf("no machine could be analysed under %s semantics (each has a single application); use --semantics initial", opt.Semantics)
	}
	res.productJoint(1e-9)
	res.Joint = "product of independent machines"
	return res, nil
}

// ownRateRatio is how far below the shared uniformization rate a
// machine's own may be before it solves with its own.
const ownRateRatio = 8

// parallel runs f(0..n-1) on all cores; the first error wins.
func parallel(ctx context.Context, n int, f func(int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := ctx.Err(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}
