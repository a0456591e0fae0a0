package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Column is a named number of a verb's output.
type Column struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// ignored are settings echoed in the verbs' JSON, not measures.
var ignored = map[string]bool{"beta": true, "tie": true, "epsilon": true, "uniformization_rate": true,
	"level": true, "confidence": true, "seed": true}

// Flatten turns a verb's JSON output into named numbers: object keys join
// with ".", array elements are named by their identifying field (model,
// name, action, component and state, t, p), so that a column means the same
// thing at every point whatever the order of the array (a ranking, say).
// Strings, booleans and arrays of numbers (intervals) other than pairs are
// left out; a pair [lo, hi] gives NAME.lo and NAME.hi.
func Flatten(data []byte) ([]Column, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the verb's JSON: %w", err)
	}
	var out []Column
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				out = append(out, Column{prefix, f})
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if ignored[k] {
					continue
				}
				walk(join(k), x[k])
			}
		case []any:
			if len(x) == 2 {
				lo, okLo := x[0].(json.Number)
				hi, okHi := x[1].(json.Number)
				if okLo && okHi {
					walk(prefix+".lo", lo)
					walk(prefix+".hi", hi)
					return
				}
			}
			for i, el := range x {
				obj, ok := el.(map[string]any)
				if !ok {
					continue
				}
				id := identify(obj)
				if id == "" {
					id = fmt.Sprint(i)
				}
				walk(prefix+"["+id+"]", obj)
			}
		}
	}
	walk("", v)
	return out, nil
}

// identify names an array element by its identifying fields.
func identify(obj map[string]any) string {
	str := func(k string) string {
		switch x := obj[k].(type) {
		case string:
			return x
		case json.Number:
			return k + "=" + x.String()
		}
		return ""
	}
	for _, k := range []string{"model", "name", "action"} {
		if s := str(k); s != "" {
			return s
		}
	}
	if c, s := str("component"), str("state"); c != "" {
		return c + ":" + s
	}
	var parts []string
	for _, k := range []string{"t", "p"} {
		if s := str(k); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ",")
}
