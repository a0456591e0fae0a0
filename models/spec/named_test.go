package spec

import (
	"strings"
	"testing"
)

// TestPerNameErrors: a value given per machine (power) or per application
// (a resource's data), as a list or an object, reports each kind of
// mistake once, at its path, in the words of the value it is about; the
// messages are those the two resolvers wrote before they shared perName.
func TestPerNameErrors(t *testing.T) {
	const base = `{"etc": [[1, 2], [3, 4]], "workload": {"nominal": [1, 1], "perturbed": [2, 1]}, "availability": {"nominal": [1, 1]},
 "mappings": [{"name": "m", "allocation": {"M1": ["A1"], "M2": ["A2"]}}], `
	for _, c := range []struct{ name, extra string }{
		{"power.busy: busy power must be a list of watts in machine order, an object of machine names to watts, or one number", `"power": {"busy": "hot"}`},
		{"power.busy: busy power must be a list of watts in machine order, an object of machine names to watts, or one number", `"power": {"busy": [1, "x"]}`},
		{"power.busy: busy power has 3 values, one per machine (2) is needed", `"power": {"busy": [1, 2, 3]}`},
		{"power.busy[1]: busy power: expected a number of watts, found null", `"power": {"busy": [1, null]}`},
		{"power.idle[0]: the idle power of M1 must be a finite number of watts >= 0, found -1", `"power": {"busy": 2, "idle": [-1, 0]}`},
		{"power.busy.M9: busy power: no machine \"M9\"", `"power": {"busy": {"M1": 1, "M2": 1, "M9": 3}}`},
		{"power.busy.M2: busy power: expected a number of watts, found null", `"power": {"busy": {"M1": 1, "M2": null}}`},
		{"power.busy: busy power: no value for machine M2: give every machine's", `"power": {"busy": {"M1": 1}}`},
		{"power.busy.M2: the busy power of M2 must be a finite number of watts >= 0, found -4", `"power": {"busy": {"M1": 1, "M2": -4}}`},
		{"resources.Net.data: resource Net: data has 1 values, one per application (2) is needed", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": [1]}}`},
		{"resources.Net.data[0]: resource Net: expected a number (0: no transfer), found null", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": [null, 1]}}`},
		// A null is the cause; no second error that no application uses the resource.
		{"resources.Net.data[0]: resource Net: expected a number (0: no transfer), found null", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": [null, 0]}}`},
		{"resources.Net.data.A9: resource Net: no application \"A9\"", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A9": 1}}}`},
		{"resources.Net.data.A2: resource Net: expected a number (0: no transfer), found null", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A1": 1, "A2": null}}}`},
		{"resources.Net.data: resource Net: data must be a number (every application the same), a list of one number per application, or an object of application names to numbers", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A1": "x"}}}`},
		{"resources.Net.data: resource Net: no application has data on it", `"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A2": 0}}}`},
	} {
		_, err := ParseSpec("s.json", []byte(base+c.extra+"}"))
		if err == nil || strings.Count(err.Error(), "error:") != 1 || !strings.Contains(err.Error(), "error: "+c.name) {
			t.Errorf("%s:\n got %v\nwant one error: %s", c.extra, err, c.name)
		}
	}
	// Right in every form: a list, an object, one number.
	for _, extra := range []string{`"power": {"busy": [3, 4], "idle": {"M1": 1, "M2": 0}}`, `"power": {"busy": 5}`,
		`"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": {"A2": 2}}}`,
		`"resources": {"Net": {"machines": ["M1"], "rate": 1, "latency": 1, "data": [0, 2]}}`} {
		if _, err := ParseSpec("s.json", []byte(base+extra+"}")); err != nil {
			t.Errorf("%s: %v", extra, err)
		}
	}
}
