package passage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"pepa/ctmc"
	"pepa/internal/membudget"
	"pepa/internal/option"
	"pepa/passage/laplace"
)

// Distribution is a passage-time distribution, whichever engine computed
// it: a Result of uniformization, or a Laplace distribution.
type Distribution interface {
	// CDF is P(passage time <= t).
	CDF(t float64) (float64, error)
	// Quantile is the least t with CDF(t) >= p (+Inf when the passage
	// ends with a probability below p).
	Quantile(p float64) (float64, error)
	// Accuracy bounds the error of every CDF value (uniformization), or
	// estimates it (Laplace: the contour's predicted error, checked
	// against a second contour).
	Accuracy() float64
}

// Accuracy is the series' truncation bound, Epsilon.
func (r *Result) Accuracy() float64 { return r.Epsilon }

// Transient engines, as Options and the command line name them.
const (
	EngineAuto           = "auto"
	EngineUniformization = "uniformization"
	EngineLaplace        = "laplace"
)

// CheckEngine refuses an unknown engine name.
func CheckEngine(name string) error {
	switch name {
	case "", EngineAuto, EngineUniformization, EngineLaplace:
		return nil
	}
	return fmt.Errorf("unknown transient engine %q (want %s, %s or %s)", name, EngineAuto, EngineUniformization, EngineLaplace)
}

// LaplaceDistribution is one set's distribution from a laplace.Engine:
// the time the chain first holds its mass in a closed set of states (a
// stopped machine's finished states, every machine of a group finished,
// a passage's target).
type LaplaceDistribution struct {
	Engine *laplace.Engine
	Set    int
}

func (d *LaplaceDistribution) CDF(t float64) (float64, error) { return d.Engine.CDF(d.Set, t) }
func (d *LaplaceDistribution) Quantile(p float64) (float64, error) {
	return d.Engine.Quantile(d.Set, p)
}
func (d *LaplaceDistribution) Accuracy() float64 { return d.Engine.Accuracy() }

// Mean is the expected passage time (+Inf when it may never end).
func (d *LaplaceDistribution) Mean() float64 { return d.Engine.Mean(d.Set) }

// MaxRest is the largest expected time to the end from a state the chain
// reaches before it.
func (d *LaplaceDistribution) MaxRest() float64 { return d.Engine.MaxRest(d.Set) }

// EngineChoice is what chose a transient engine for a chain, and why.
type EngineChoice struct {
	Engine string // EngineUniformization or EngineLaplace
	Why    string
	// Laplace is the prepared engine when Engine is EngineLaplace.
	Laplace *laplace.Engine
}

// Laplace cost model: a window's solves, and what a complex solve costs
// in steps of uniformization (one step of a block of passages, measured
// on the mapping chains: a solve is one pass over the transitions in
// complex arithmetic with a division a state; the step shares a pass
// between up to eight passages).
const (
	laplaceWindows   = 3  // the goal's window, and about two more for the quantiles and the tails
	solveCostInSteps = 3  // a complex solve against a uniformization step
	autoMargin       = 2  // Laplace must be predicted this many times cheaper
	laplaceMinSteps  = 20 // below this many steps, uniformization always
)

// EngineQuery is what ChooseEngine decides on: passages on Chain from
// Alpha to closed sets of states (Sets: masks over states, Target where a
// passage ends), for a goal Beta (0: at the mean), over Horizon (0: to the
// distribution's tail), to Epsilon; Rate is uniformization's; Force is
// EngineUniformization or EngineLaplace to decide, EngineAuto (or "") to
// let cost decide.
type EngineQuery struct {
	Chain   *ctmc.Chain
	Alpha   []float64
	Sets    [][]bool
	Target  laplace.Target
	Beta    float64
	Horizon float64
	Epsilon float64
	Rate    float64
	Force   string
}

// ChooseEngine decides how to solve the passages of eq: the
// Laplace engine where the chain orders into small blocks with real
// spectra (acyclic chains: machines stopped once finished, passages to a
// target) and its predicted cost, a few windows of solves, is below
// uniformization's, about q t steps: t the horizon when given, else the
// distribution's tail, the mean plus ln(2/epsilon) times the largest mean
// remaining time over e (the tail of any absorption time with mean
// remaining time at most M from every state falls by 1/e every e M).
// Beta anchors the Laplace windows.
func ChooseEngine(ctx context.Context, eq EngineQuery) (EngineChoice, error) {
	c, alpha, sets, tgt := eq.Chain, eq.Alpha, eq.Sets, eq.Target
	beta, horizon, epsilon, q, force := eq.Beta, eq.Horizon, eq.Epsilon, eq.Rate, eq.Force
	if force == EngineUniformization {
		return EngineChoice{Engine: EngineUniformization, Why: option.Text("{Transient} uniformization")}, nil
	}
	// Memory: the system's order and exit rates, the engine's start, mean
	// times, sets (a mask and positions each) and a complex vector per
	// worker; a block's dense generator is at most MaxBlock^2 numbers.
	n := int64(c.N + 1)
	need := membudget.Bytes(n, 8+4+4+8+8+1+5*int64(len(sets))+16*int64(runtime.GOMAXPROCS(0)))
	if err := membudget.Check(ctx, fmt.Sprintf("passage: Laplace-transform inversion's vectors over %d states", c.N), need, ""); err != nil {
		if force == EngineLaplace {
			return EngineChoice{}, err
		}
		return EngineChoice{Engine: EngineUniformization, Why: "Laplace-transform inversion does not fit in the memory budget (" + err.Error() + ")"}, nil
	}
	sys, err := laplace.NewSystem(c, tgt)
	if err != nil {
		if force == EngineLaplace || !errors.Is(err, laplace.ErrNotApplicable) {
			return EngineChoice{}, err
		}
		return EngineChoice{Engine: EngineUniformization, Why: "the chain's cycles rule out Laplace-transform inversion (" + err.Error() + ")"}, nil
	}
	if err := membudget.Check(ctx, fmt.Sprintf("passage: the Laplace engine's block generators (%d blocks)", sys.Blocks()), membudget.Bytes(1, sys.BlockBytes()), ""); err != nil {
		if force == EngineLaplace {
			return EngineChoice{}, err
		}
		return EngineChoice{Engine: EngineUniformization, Why: "Laplace-transform inversion's blocks do not fit in the memory budget (" + err.Error() + ")"}, nil
	}
	eng, err := laplace.New(ctx, sys, alpha, sets, beta, epsilon)
	if err != nil {
		if force == EngineLaplace || !errors.Is(err, laplace.ErrNotApplicable) {
			return EngineChoice{}, err
		}
		return EngineChoice{Engine: EngineUniformization, Why: "Laplace-transform inversion does not apply (" + err.Error() + ")"}, nil
	}
	if force == EngineLaplace {
		return EngineChoice{Engine: EngineLaplace, Why: option.Text("{Transient} laplace"), Laplace: eng}, nil
	}
	if !(horizon > 0) {
		tail, mean := 0.0, 0.0
		for k := range sets {
			tail = math.Max(tail, eng.MaxRest(k))
			mean = math.Max(mean, eng.Mean(k))
		}
		horizon = mean + math.Log(2/epsilon)*tail/math.E
	}
	steps := q * horizon
	// A solve is a pass over the transitions, and more where blocks the
	// chain leaves are factored at every node (System.Work).
	perSolve := solveCostInSteps * float64(sys.Work()) / float64(max(1, len(c.Col)))
	solves := float64(laplaceWindows*eng.WindowSolves() + eng.CheckSolves())
	if math.IsInf(horizon, 0) || math.IsNaN(horizon) {
		return EngineChoice{Engine: EngineUniformization, Why: "a passage may never end: uniformization's series bounds what it leaves"}, nil
	}
	if steps < laplaceMinSteps || steps < autoMargin*perSolve*solves {
		return EngineChoice{Engine: EngineUniformization, Why: fmt.Sprintf("uniformization predicted cheaper: about %.3g steps (q = %.3g, tail to t = %.4g) against %.0f Laplace solves worth %.0f steps",
			steps, q, horizon, solves, perSolve*solves)}, nil
	}
	why := fmt.Sprintf("Laplace-transform inversion predicted cheaper: about %.0f solves worth %.0f steps against about %.3g steps of uniformization (q = %.3g, tail to t = %.4g)",
		solves, perSolve*solves, steps, q, horizon)
	// The contour's prediction assumes transforms of moderate size near
	// it; poles of high order (an Erlang chain of many phases: a nearly
	// deterministic time) make them huge there, and the inversion loses
	// what the prediction promises. The second contour finds that out at
	// the goal, before anything is reported: uniformization then.
	at := beta
	if !(at > 0) {
		at = eng.Anchor()
	}
	check, err := eng.Check(at)
	if err != nil {
		return EngineChoice{}, err
	}
	if check > epsilon {
		return EngineChoice{Engine: EngineUniformization, Why: fmt.Sprintf("%s, but its two contours differ by %.2g at t = %.4g, more than epsilon %.2g (poles of high order: phases of nearly deterministic times): uniformization instead",
			why, check, at, epsilon)}, nil
	}
	return EngineChoice{Engine: EngineLaplace, Laplace: eng, Why: why}, nil
}

// LaplaceNote says, after a check at the goal returned check, how the
// Laplace engine ran: its solves, the accuracy it states and where that
// comes from (a second contour, or the trapezoidal rule refined where the
// second contour disagreed), and the contour it took for complex poles.
func LaplaceNote(eng *laplace.Engine, check float64) string {
	note := fmt.Sprintf("%d solves, every probability within an estimated %.2g", eng.Solves(), eng.Accuracy())
	if l := eng.Level(); l > 0 {
		note += fmt.Sprintf(" (the trapezoidal rule refined to h/%d, its two finest levels at beta: %.2g)", 1<<l, check)
	} else {
		note += fmt.Sprintf(" (a second contour at beta: %.2g)", check)
	}
	switch n := eng.ComplexBlocks(); {
	case n > 0:
		note += fmt.Sprintf("; %d blocks with complex eigenvalues, up to %.1f degrees from the negative real axis: a contour of %d nodes inside them",
			n, eng.Sector()*180/math.Pi, 2*eng.Nodes()+1)
	case eng.Sector() > 0:
		note += fmt.Sprintf("; poles up to order %d: a contour of %d nodes kept %.1f degrees from the negative real axis",
			eng.PoleOrder(), 2*eng.Nodes()+1, eng.Sector()*180/math.Pi)
	}
	return note
}
