package ctmc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pepa/internal/testing/testmodels"
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

// TestMemoAndSplitRowsExact: in every state of the radix product (reachable
// or not) and under every per-state transition limit from 1 to 24, an
// explorer lists the same row, or the same error, with memoised and split
// subtrees as without: on a model split into groups (with a state whose
// apparent rate is undefined and one whose passive activity finds no
// partner), on workstation clusters (groups of memoised cooperations split
// from their shared repairman), on a mapping model, and on storage pools
// whose servers, failure counter and buffer are one wide memoised subtree
// (made wide at 10 bits here), with undefined apparent rates inside it
// and in the cooperation above it.
func TestMemoAndSplitRowsExact(t *testing.T) {
	var b strings.Builder
	var acts, names []string
	for i := 1; i <= 7; i++ {
		switch i {
		case 3: // mixed in M3c
			fmt.Fprintf(&b, "M%[1]d = (c%[1]d, 1.0).M%[1]db + (c%[1]d, 2.0).M%[1]dc;\nM%[1]db = (c%[1]d, 1.5).M%[1]d;\nM%[1]dc = (c%[1]d, 1.0).M%[1]d + (c%[1]d, infty).M%[1]db;\n", i)
		case 5: // M5c only passive: no active partner
			fmt.Fprintf(&b, "M%[1]d = (c%[1]d, 1.0).M%[1]db + (c%[1]d, 2.0).M%[1]dc;\nM%[1]db = (c%[1]d, 1.5).M%[1]d + (d%[1]d, 0.5).M%[1]dc;\nM%[1]dc = (c%[1]d, infty).M%[1]d;\n", i)
		default:
			fmt.Fprintf(&b, "M%[1]d = (c%[1]d, 1.0).M%[1]db + (c%[1]d, 2.0).M%[1]dc + (d%[1]d, 0.5).M%[1]d;\nM%[1]db = (c%[1]d, 1.5).M%[1]d;\nM%[1]dc = (c%[1]d, 2.5).M%[1]d + (c%[1]d, 0.5).M%[1]db;\n", i)
		}
		fmt.Fprintf(&b, "A%[1]d = (c%[1]d, infty).A%[1]d + (c%[1]d, infty).A%[1]d;\n", i)
		acts = append(acts, fmt.Sprintf("c%d", i))
		names = append(names, fmt.Sprintf("M%d", i))
	}
	b.WriteString("B = (e, 1.0).B;\n")
	fmt.Fprintf(&b, "(B <> A1 <> A2 <> A3 <> A4 <> A5 <> A6 <> A7) <%s> (%s)\n", strings.Join(acts, ", "), strings.Join(names, " <> "))
	srcs := map[string]string{
		"split":        b.String(),
		"workstations": testmodels.Workstations(3, 3, 3),
		"mapping":      testmodels.Mapping(14, 7, 1),
		// Waiting workstations enabling serve2 both ways, failed ones enabling
		// repair both ways: undefined apparent rates inside a group, and
		// in the joint transitions formed from the groups' lists.
		"workstations mixed serve": strings.Replace(testmodels.Workstations(3, 3, 3),
			"Wait2 = (serve2, infty).Ws2;", "Wait2 = (serve2, infty).Ws2 + (serve2, 1.0).Down2;", 1),
		"workstations mixed repair": strings.Replace(testmodels.Workstations(3, 3, 3),
			"Down1 = (repair, infty).Ws1;", "Down1 = (repair, infty).Ws1 + (repair, 1.0).Wait1;", 1),
		"storage": testmodels.Storage(3, 2, 1, 1),
		// A failed server that flushes both ways (inside the wide
		// subtree); a reading one that answers both ways (above it).
		"storage mixed flush": strings.Replace(testmodels.Storage(3, 2, 1, 1),
			"(flush, slowFlush).NodeDown;", "(flush, slowFlush).NodeDown + (flush, infty).Node;", 1),
		"storage mixed look": strings.Replace(testmodels.Storage(3, 2, 1, 1),
			"NodeRead = (look, look).Node;", "NodeRead = (look, look).Node + (look, infty).NodeDown;", 1),
	}
	defer func(bits int, reuse float64) { memoDenseBits, memoWideReuse = bits, reuse }(memoDenseBits, memoWideReuse)
	for name, src := range srcs {
		memoDenseBits, memoWideReuse = memoBits, 64
		if strings.HasPrefix(name, "storage") {
			memoDenseBits, memoWideReuse = 4, 4
		}
		m, diags := lang.Load(name, []byte(src))
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags.Err())
		}
		s, err := Compile(m, DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		// Every state of the product, numbered by its radix.
		c := &Chain{S: s, N: int(s.RadixSize)}
		set := newIndex(s, 0, nil)
		direct, _ := set.(*directIndex)
		if direct == nil {
			t.Fatalf("%s: no direct index", name)
		}
		for r := 0; r < c.N; r++ {
			st := make([]uint64, s.Words)
			q := r
			for _, l := range s.Leaves {
				l.SetLocal(st, q%l.NumLocal)
				q /= l.NumLocal
			}
			c.States = append(c.States, st...)
			set.insert(c.States, int32(r), int64(r))
		}
		root := s.explorers(1, 0)[0].root
		if _, ok := root.(*splitCoop); name == "split" && !ok {
			t.Fatalf("%s: the cooperation was not split: %T", name, root)
		}
		if _, ok := root.(*splitCoopX); strings.HasPrefix(name, "workstations") && !ok {
			t.Fatalf("%s: the cooperation was not split: %T", name, root)
		}
		if strings.HasPrefix(name, "storage") {
			if top, ok := root.(*coopNode); !ok {
				t.Fatalf("%s: the root is %T", name, root)
			} else if m, ok := top.y.(*memoNode); !ok || m.wide == nil {
				t.Fatalf("%s: the servers' side is %T, not a wide memoised subtree", name, top.y)
			} else if m, ok := top.x.(*memoNode); !ok || m.wide != nil {
				t.Fatalf("%s: the clients' side is %T, not a memoised subtree indexed directly", name, top.x)
			}
		}
		errs := 0
		for limit := 0; limit <= 24; limit++ {
			var rows [2][]string
			for k, memo := range []bool{false, true} {
				memoEnabled = memo
				x := s.explorers(1, limit)[0]
				memoEnabled = true
				for i := 0; i < c.N; i++ {
					p := &piece{w: s.Words, lo: i, hi: i + 1}
					x.expand(c.States, set, direct, newRateInterner().view.Load(), p)
					row := fmt.Sprint(p.rows.count, p.rows.idx, p.rows.act, p.rows.rate, p.rows.unkPos)
					if p.rows.errMsg != nil {
						row += p.rows.errMsg(c).Error()
						errs++
					}
					rows[k] = append(rows[k], row)
				}
			}
			for i := range rows[0] {
				if rows[0][i] != rows[1][i] {
					t.Fatalf("%s, limit %d, state %d (%s):\n memoised %s\n in place %s", name, limit, i, c.StateString(i), rows[1][i], rows[0][i])
				}
			}
		}
		if errs == 0 {
			t.Errorf("%s: no state met an error", name)
		}
	}
}

// TestWideTable: keys put into a wide memoNode's table are found with
// their values as it grows past its first size, key 0 and keys that share
// their low or high bits included; keys not put are absent.
func TestWideTable(t *testing.T) {
	tb := newWideTable()
	var keys []uint64
	for i := uint64(0); i < 5000; i++ {
		keys = append(keys, i, i<<40, i*0x9E3779B97F4A7C15)
	}
	want := map[uint64]int32{}
	for k, key := range keys {
		if _, ok := want[key]; ok {
			continue
		}
		at, v := tb.find(key)
		if v != 0 {
			t.Fatalf("key %#x found (%d) before it was put", key, v)
		}
		val := int32(k + 1)
		if k%7 == 0 {
			val = -1 // evaluated in place
		}
		tb.put(at, key, val)
		want[key] = val
	}
	if tb.n != len(want) || len(tb.keys) < 2*tb.n {
		t.Fatalf("%d entries in %d slots, want %d at most half full", tb.n, len(tb.keys), len(want))
	}
	for key, val := range want {
		if _, v := tb.find(key); v != val {
			t.Fatalf("key %#x: %d, want %d", key, v, val)
		}
	}
	for _, key := range []uint64{1 << 63, 5001 << 40, 12345678901} {
		if _, ok := want[key]; !ok {
			if _, v := tb.find(key); v != 0 {
				t.Errorf("key %#x never put: %d", key, v)
			}
		}
	}
}
