package shard

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]Index{"1/1": {1, 1}, "2/4": {2, 4}, " 3 / 3 ": {3, 3}} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "1", "0/4", "5/4", "-1/4", "1/0", "a/b", "1/2/3", "2/2000000"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRangeCovers: the shards of any run take every unit once, in order.
func TestRangeCovers(t *testing.T) {
	for total := 0; total < 60; total++ {
		for n := 1; n < 13; n++ {
			next := 0
			for k := 1; k <= n; k++ {
				first, count := Index{k, n}.Range(total)
				if first != next || count < 0 || count > total/n+1 {
					t.Fatalf("%d units, shard %d/%d: %d from %d (expected from %d)", total, k, n, count, first, next)
				}
				next += count
			}
			if next != total {
				t.Fatalf("%d units in %d shards: %d covered", total, n, next)
			}
		}
	}
}

func shards(t *testing.T, n, total int, edit func(k int, h *Header)) []*File {
	t.Helper()
	var out []*File
	for k := 1; k <= n; k++ {
		first, count := Index{k, n}.Range(total)
		h := Header{Verb: "simulate", Command: []string{"--beta=30", "m.pepa"}, Models: []Model{Hash("m.pepa", []byte("P = (a, 1).P; P"))},
			Shard: k, Shards: n, Units: "replications", Total: total, First: first, Count: count}
		if edit != nil {
			edit(k, &h)
		}
		var b bytes.Buffer
		if err := Write(&b, h, map[string]int{"k": k}); err != nil {
			t.Fatal(err)
		}
		f, err := Read(fmt.Sprintf("s%d.json", k), &b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func TestCheck(t *testing.T) {
	fs := shards(t, 4, 1000, nil)
	got, err := Check([]*File{fs[2], fs[0], fs[3], fs[1]})
	if err != nil {
		t.Fatal(err)
	}
	for k, f := range got {
		if f.Shard != k+1 || string(f.Data) != fmt.Sprintf(`{"k":%d}`, k+1) {
			t.Fatalf("shard %d: %+v %s", k+1, f.Header, f.Data)
		}
	}
	for _, c := range []struct {
		files []*File
		want  string
	}{
		{fs[:3], "shards 4 of 4 are missing"},
		{[]*File{fs[0], fs[1], fs[1], fs[2], fs[3]}, "shard 2/4 is given twice (s2.json and s2.json)"},
		{shards(t, 4, 1000, func(k int, h *Header) {
			if k == 3 {
				h.Command = []string{"--beta=31", "m.pepa"}
			}
		}), "s1.json and s3.json are not shards of one run: the commands differ (--beta=30 m.pepa, --beta=31 m.pepa)"},
		{shards(t, 4, 1000, func(k int, h *Header) {
			if k == 2 {
				h.Models[0] = Hash("m.pepa", []byte("P = (a, 2).P; P"))
			}
		}), "the models differ"},
		{shards(t, 4, 1000, func(k int, h *Header) {
			if k == 2 {
				h.Count++
			}
		}), "s2.json: shard 2/4 of 1000 replications holds replications 250 to 500, not 250 to 499"},
		{append(shards(t, 4, 1000, nil)[:3], shards(t, 5, 1000, nil)[4]), "the shard counts differ (4, 5)"},
		{append(shards(t, 4, 1000, nil)[:3], shards(t, 4, 999, nil)[3]), "the runs' sizes differ"},
	} {
		if _, err := Check(c.files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
	if _, err := Read("x.json", strings.NewReader(`{"verb": "simulate"}`)); err == nil || !strings.Contains(err.Error(), "not a shard file") {
		t.Errorf("a file without a version: %v", err)
	}
}
