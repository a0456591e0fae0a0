package randmodel

import (
	"testing"

	"pepa/lang"
)

// Every generated model is accepted by the checker, and a seed always
// gives the same text.
func TestModelsCheck(t *testing.T) {
	families := map[string]int{}
	features := map[string]int{}
	for seed := int64(0); seed < 1000; seed++ {
		m := Generate(seed)
		if again := Generate(seed); again.Source != m.Source {
			t.Fatalf("seed %d: not deterministic", seed)
		}
		if _, diags := lang.Load("rand.pepa", []byte(m.Source)); diags.HasErrors() {
			t.Errorf("seed %d: %v\n%s", seed, diags.Err(), m.Source)
			continue
		}
		families[m.Family]++
		for _, f := range m.Features {
			features[f]++
		}
	}
	t.Logf("families %v", families)
	t.Logf("features %v", features)
	for _, f := range []string{"stiff", "passive", "weighted-passive", "mixed-passive", "array", "array-coop",
		"duplicate-prefix", "self-loop", "alias", "startup", "repeated-anonymous", "hiding", "hiding-shared",
		"wildcard", "reducible-component", "stop-state", "rate-expression", "static", "static-twice", "mixed-array", "weighted-split"} {
		if features[f] == 0 {
			t.Errorf("no model in 1000 has feature %s", f)
		}
	}
}

// Medium models check too, and a seed gives the same text.
func TestMediumModelsCheck(t *testing.T) {
	families := map[string]int{}
	for seed := int64(0); seed < 200; seed++ {
		m := GenerateWith(seed, Medium)
		if again := GenerateWith(seed, Medium); again.Source != m.Source {
			t.Fatalf("seed %d: not deterministic", seed)
		}
		if _, diags := lang.Load("rand.pepa", []byte(m.Source)); diags.HasErrors() {
			t.Errorf("seed %d: %v\n%s", seed, diags.Err(), m.Source)
		}
		families[m.Family]++
	}
	if families["general"] == 0 || families["mapping"] == 0 {
		t.Errorf("families %v: want both general and mapping models", families)
	}
}
