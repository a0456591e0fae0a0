package models_test

import (
	"context"
	"fmt"
	"os"

	"pepa/ctmc"
	"pepa/lang"
	"pepa/models"
)

// Every figure 'pepa robustness --format json' prints comes from one call,
// models.Robustness: here three machines staging their input over one
// network and a fourth that shares nothing (the README's example), solved
// by groups, each group on its own chain.
func ExampleRobustness() {
	src, err := os.ReadFile("../testdata/coupled/shared-net.pepa")
	if err != nil {
		panic(err)
	}
	m, diags := lang.Load("shared-net.pepa", src)
	if diags.HasErrors() {
		panic(diags.Err())
	}
	rep, err := models.Robustness(context.Background(), []models.Input{{Name: "shared-net.pepa", Model: m}},
		models.Request{Question: models.Question{Beta: 20}, Compile: ctmc.DefaultOptions})
	if err != nil {
		panic(err)
	}
	r := rep.Results[0]
	fmt.Printf("%s, solved %s: %s\n", r.Model, r.Solved, r.Why)
	for _, g := range r.Groups {
		fmt.Printf("group %v (%s, %d states): P(all <= 20) %.10f, E[all finished] %.6f\n", g.Machines, g.Solved, g.States, g.PAllByBeta, g.Mean)
	}
	for _, mr := range r.Machines {
		fmt.Printf("%s: %d applications, P(F <= 20) %.10f, E[F] %.4f, q99 %.4f\n", mr.Name, mr.Applications, mr.PByBeta, mr.Mean, mr.Quantile)
	}
	fmt.Printf("robustness %.10f, P(all <= 20) %.10f, E[makespan] %.6f (error below 1e-6: %v)\n", r.Robustness, r.PAllByBeta, r.ExpectedMakespan, r.MakespanError < 1e-6)
	fmt.Printf("joint: %s\n", r.Joint)
	// Output:
	// shared-net.pepa, solved decomposed: 1 group of coupled machines and 1 machine alone, each on its own chain
	// group [M1 M2 M3] (exact, 1023 states): P(all <= 20) 0.1571033670, E[all finished] 33.625502
	// group [M4] (alone, 5 states): P(all <= 20) 0.8570405273, E[all finished] 12.142857
	// M1: 3 applications, P(F <= 20) 0.5217090330, E[F] 22.5119, q99 70.3595
	// M2: 3 applications, P(F <= 20) 0.5569512975, E[F] 22.0417, q99 73.5155
	// M3: 3 applications, P(F <= 20) 0.5384573662, E[F] 21.2083, q99 59.2269
	// M4: 3 applications, P(F <= 20) 0.8570405273, E[F] 12.1429, q99 38.2065
	// robustness 0.5217090330, P(all <= 20) 0.1346439525, E[makespan] 34.113209 (error below 1e-6: true)
	// joint: product over 1 group of coupled machines (all finished on each group's own chain) and 1 machine alone
}
