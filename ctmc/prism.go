package ctmc

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WritePrismTra writes the transition matrix in PRISM's explicit format: a
// header "STATES TRANSITIONS", then "i j rate" per line, sorted by source
// and target. Transitions between the same two states under different
// actions are summed (the matrix has one entry per pair); self-loops are
// left out, as they do not change a CTMC's behaviour.
func WritePrismTra(w io.Writer, c *Chain) error {
	bw := bufio.NewWriter(w)
	type entry struct {
		j    int32
		rate float64
	}
	var rows [][]entry
	total := 0
	rows = make([][]entry, c.N)
	for i := 0; i < c.N; i++ {
		var row []entry
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := c.Col[k]
			if int(j) == i {
				continue
			}
			merged := false
			for e := range row {
				if row[e].j == j {
					row[e].rate += c.RateAt(k)
					merged = true
					break
				}
			}
			if !merged {
				row = append(row, entry{j, c.RateAt(k)})
			}
		}
		sort.Slice(row, func(a, b int) bool { return row[a].j < row[b].j })
		rows[i] = row
		total += len(row)
	}
	fmt.Fprintf(bw, "%d %d\n", c.N, total)
	for i, row := range rows {
		for _, e := range row {
			fmt.Fprintf(bw, "%d %d %s\n", i, e.j, strconv.FormatFloat(e.rate, 'g', -1, 64))
		}
	}
	return bw.Flush()
}

// prismName turns a component name into a PRISM identifier.
func prismName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', i > 0 && r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '\'':
			b.WriteString("_prime")
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// WritePrismSta writes the state file: one variable per leaf, whose value
// is the leaf's local state index (Leaf.LocalName gives its name).
func WritePrismSta(w io.Writer, c *Chain) error {
	bw := bufio.NewWriter(w)
	names := make([]string, len(c.S.Leaves))
	for i, l := range c.S.Leaves {
		names[i] = prismName(l.Name)
	}
	fmt.Fprintf(bw, "(%s)\n", strings.Join(names, ","))
	vals := make([]string, len(c.S.Leaves))
	for i := 0; i < c.N; i++ {
		st := c.State(i)
		for k, l := range c.S.Leaves {
			vals[k] = strconv.Itoa(l.Local(st))
		}
		fmt.Fprintf(bw, "%d:(%s)\n", i, strings.Join(vals, ","))
	}
	return bw.Flush()
}

// WritePrismLab writes the label file: "init", "deadlock", and for every
// action a label "entered_ACTION" on the states that a transition with that
// action enters (self-loops included).
func WritePrismLab(w io.Writer, c *Chain) error {
	bw := bufio.NewWriter(w)
	// Actions that label some transition, in id order.
	used := make([]bool, len(c.S.Actions))
	for _, a := range c.Act {
		used[a] = true
	}
	labels := []string{"init", "deadlock"}
	labelOf := make([]int, len(c.S.Actions))
	for a, name := range c.S.Actions {
		if used[a] {
			labelOf[a] = len(labels)
			labels = append(labels, "entered_"+prismName(name))
		}
	}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = fmt.Sprintf("%d=%q", i, l)
	}
	fmt.Fprintln(bw, strings.Join(parts, " "))

	entered := make([][]int32, c.N) // labels per state
	for i := 0; i < c.N; i++ {
		for k := c.RowPtr[i]; k < c.RowPtr[i+1]; k++ {
			j := c.Col[k]
			l := int32(labelOf[c.Act[k]])
			if !containsInt32(entered[j], l) {
				entered[j] = append(entered[j], l)
			}
		}
	}
	dead := map[int32]bool{}
	for _, d := range c.Deadlocks {
		dead[d] = true
	}
	for i := 0; i < c.N; i++ {
		var ls []int32
		if i == 0 {
			ls = append(ls, 0)
		}
		if dead[int32(i)] {
			ls = append(ls, 1)
		}
		e := append([]int32(nil), entered[i]...)
		sort.Slice(e, func(a, b int) bool { return e[a] < e[b] })
		ls = append(ls, e...)
		if len(ls) == 0 {
			continue
		}
		strs := make([]string, len(ls))
		for k, l := range ls {
			strs[k] = strconv.Itoa(int(l))
		}
		fmt.Fprintf(bw, "%d: %s\n", i, strings.Join(strs, " "))
	}
	return bw.Flush()
}

func containsInt32(s []int32, x int32) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}
