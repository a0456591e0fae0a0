package option

import (
	"errors"
	"testing"
)

// TestSpelling: keys take the library's spelling until the program spells
// them, then the program's; JSON and set notation, and keys in arguments,
// are left alone; %w still wraps.
func TestSpelling(t *testing.T) {
	base := errors.New("base")
	if got := Errorf("raise {MaxStates} or {SimulateVerb}; {\"a\": 1} {a, b}: %w", base).Error(); got != `raise MaxStates or a simulation (models.Simulate); {"a": 1} {a, b}: base` {
		t.Fatalf("library spelling: %q", got)
	}
	Spell(map[string]string{"MaxStates": "--max-states", "SimulateVerb": "'pepa simulate'"})
	defer spelling.Store(nil)
	err := Errorf("raise {MaxStates} or {SimulateVerb} ({Other}) %s: %w", "{MaxStates}", base)
	if got := err.Error(); got != "raise --max-states or 'pepa simulate' (Other) {MaxStates}: base" {
		t.Fatalf("program spelling: %q", got)
	}
	if !errors.Is(err, base) {
		t.Fatal("Errorf does not wrap")
	}
	if got := Sprintf("{MaxStates}=%d", 3); got != "--max-states=3" {
		t.Fatalf("Sprintf: %q", got)
	}
}
