package laplace_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/models"
	"pepa/passage/laplace"
)

func TestZZExp(t *testing.T) {
	path := os.Getenv("ZZMODEL")
	if path == "" {
		t.Skip()
	}
	src, _ := os.ReadFile(path)
	m, d := lang.Load(path, src)
	if d.HasErrors() {
		t.Fatal(d.Err())
	}
	s, _ := ctmc.Compile(m, ctmc.DefaultOptions)
	all, _ := models.FindMachines(s, nil)
	stop := map[*ctmc.Leaf][]int32{}
	for _, mm := range all {
		stop[mm.Leaf] = mm.Last
	}
	var big []*ctmc.Leaf
	for _, g := range s.Groups() {
		if len(g) > len(big) {
			big = g
		}
	}
	sub, _, _ := s.Restrict(big, stop)
	st := time.Now()
	c, err := ctmc.Derive(context.Background(), sub, ctmc.DeriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("derive", time.Since(st), c.N, c.NumTransitions())
	ms, _ := models.FindMachines(sub, nil)
	var sets [][]bool
	allf := make([]bool, c.N)
	for i := range allf {
		allf[i] = true
	}
	for _, mm := range ms {
		set := make([]bool, c.N)
		for i := range set {
			set[i] = mm.Leaf.LocalName(mm.Leaf.Local(c.State(i))) == ctmc.FinishedState
			allf[i] = allf[i] && set[i]
		}
		sets = append(sets, set)
	}
	sets = append(sets, allf)
	st = time.Now()
	sys, err := laplace.NewSystem(c, laplace.Target{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("system", time.Since(st), sys.States(), sys.Transitions(), sys.Blocks())
	alpha := make([]float64, c.N)
	alpha[0] = 1
	st = time.Now()
	beta := 30000.0
	if b := os.Getenv("ZZBETA"); b != "" {
		fmt.Sscan(b, &beta)
	}
	e, err := laplace.New(context.Background(), sys, alpha, sets, beta, 1e-10)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("real solves", time.Since(st))
	st = time.Now()
	for k := range sets {
		p, _ := e.CDF(k, beta)
		fmt.Printf("set %d: P(<= beta) %.12f mean %.6f limit %.15f maxrest %.4g\n", k, p, e.Mean(k), e.Limit(k), e.MaxRest(k))
	}
	fmt.Println("P at beta", time.Since(st), e.Solves())
	st = time.Now()
	for k := range sets {
		q, _ := e.Quantile(k, 0.99)
		fmt.Printf("set %d q99 %.6f\n", k, q)
	}
	fmt.Println("quantiles", time.Since(st), e.Solves())
	st = time.Now()
	chk, _ := e.Check(beta)
	fmt.Println("check", chk, time.Since(st), e.Solves())
}
