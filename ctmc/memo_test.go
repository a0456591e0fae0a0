package ctmc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pepa/lang"
)

// TestMemoKeepsTransitionLimit: a memoised cooperation listed after a
// sibling's 65,536 joint transitions makes its limit checks at the real
// positions. Its three shared transitions are checked at positions 65,536
// to 65,538, so a limit of 65,536 (--max-states 16384) is exceeded and one
// of 65,540 (16385) is not; memoised or not, the derivation ends the same
// way (the per-state limit in the first case, the state limit in the
// second). Listed first, it makes the sibling overflow. A model whose
// memoised part meets an undefined apparent rate reports it the same way.
func TestMemoKeepsTransitionLimit(t *testing.T) {
	wide := "Q1 = (a, 1.0).Q1 + (a, 2.0).Q2 + (a, 3.0).Q3 + (a, 4.0).Q4;\n" +
		"Q2 = (a, 1.0).Q1 + (a, 2.0).Q2 + (a, 3.0).Q3 + (a, 4.0).Q4;\n" +
		"Q3 = (a, 1.0).Q1 + (a, 2.0).Q2 + (a, 3.0).Q3 + (a, 4.0).Q4;\n" +
		"Q4 = (a, 1.0).Q1 + (a, 2.0).Q2 + (a, 3.0).Q3 + (a, 4.0).Q4;\n" +
		"X = (b, 1.0).X2 + (b, 2.0).X3 + (b, 3.0).X4;\nX2 = (c, 1.0).X;\nX3 = (c, 2.0).X;\nX4 = (c, 3.0).X;\n" +
		"Y = (b, infty).Y2;\nY2 = (d, 1.0).Y;\n"
	cases := []struct {
		name, src string
		max       int
		want      string
	}{
		{"over", wide + "Q1[8][a] || (X <b> Y)\n", 16384, "has more than 65536 transitions"},
		{"under", wide + "Q1[8][a] || (X <b> Y)\n", 16385, "more than 16385 states"},
		{"memo first", wide + "(X <b> Y) || Q1[8][a]\n", 16384, "has more than 65536 transitions"},
		{"mixed", "X = (b, 1.0).X + (b, infty).X2;\nX2 = (c, 1.0).X;\nY = (b, 1.0).Y2;\nY2 = (d, 1.0).Y;\nZ = (e, 1.0).Z2;\nZ2 = (f, 1.0).Z;\n" +
			"Z || (X <b> Y)\n", 0, "enabled both actively and passively"},
	}
	for _, tc := range cases {
		var errs [2]string
		for k, memo := range []bool{false, true} {
			m, diags := lang.Load(tc.name, []byte(tc.src))
			if diags.HasErrors() {
				t.Fatalf("%s: %v", tc.name, diags.Err())
			}
			s, err := Compile(m, Options{MaxStates: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			memoEnabled = memo
			_, err = Derive(context.Background(), s, DeriveOptions{MaxStates: tc.max})
			memoEnabled = true
			errs[k] = fmt.Sprint(err)
		}
		if errs[0] != errs[1] || !strings.Contains(errs[1], tc.want) {
			t.Errorf("%s: memoised %q, not %q; want %q", tc.name, errs[1], errs[0], tc.want)
		}
	}
}
