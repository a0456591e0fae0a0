package ctmc

import (
	"bytes"
	"testing"
)

// TestPrismExport checks a small export line by line against what the
// model means: a worker that takes a tool, and a tool that may break.
func TestPrismExport(t *testing.T) {
	c := derive(t, `
w = 2; u = 3; f = 0.5; r = 4;
Worker = (get, w).Using; Using = (use, u).Worker;
Tool = (get, infty).Busy + (fail, f).Broken; Busy = (use, infty).Tool; Broken = (fix, r).Tool;
Worker <get, use> Tool`, DefaultOptions)
	// States: 0 (Worker, Tool), 1 (Worker, Broken), 2 (Using, Busy). Local
	// indices: Worker 0, Using 1; Tool 0, Busy 1, Broken 2.
	tests := []struct {
		name  string
		write func(*bytes.Buffer) error
		want  string
	}{
		{"tra", func(b *bytes.Buffer) error { return WritePrismTra(b, c) },
			"3 4\n0 1 0.5\n0 2 2\n1 0 4\n2 0 3\n"},
		{"sta", func(b *bytes.Buffer) error { return WritePrismSta(b, c) },
			"(Worker,Tool)\n0:(0,0)\n1:(0,2)\n2:(1,1)\n"},
		{"lab", func(b *bytes.Buffer) error { return WritePrismLab(b, c) },
			`0="init" 1="deadlock" 2="entered_get" 3="entered_use" 4="entered_fail" 5="entered_fix"` + "\n" +
				"0: 0 3 5\n1: 4\n2: 2\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := tt.write(&b); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tt.name, b.String(), tt.want)
		}
	}
}

func TestPrismNames(t *testing.T) {
	for in, want := range map[string]string{"M1": "M1", "P'": "P_prime", "Client[2]": "Client_2_", "P#2": "P_2", "(a, r).P": "_a__r__P"} {
		if got := prismName(in); got != want {
			t.Errorf("prismName(%q) = %q, want %q", in, got, want)
		}
	}
}
