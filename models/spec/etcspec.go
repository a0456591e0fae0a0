package spec

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"

	"pepa/models/etc"
)

// generateETC draws the matrix of the specification's etc_generate field
// (package etc), or reports why not at the field's place. It returns the
// numbers of applications and machines when their fields are valid, even
// if others are not (-1 where unknown), so that a bad method or seed does
// not make every workload and mapping look wrong too.
func (r *resolver) generateETC(in *Instance) ([][]float64, int, int) {
	s := r.s
	p, errs := s.ETCGenerate.Resolve()
	nApps, nMach := p.Applications, p.Machines
	for _, e := range errs {
		path := "etc_generate"
		switch e.Field {
		case "":
			nApps, nMach = -1, -1
		case "applications":
			nApps = -1
		case "machines":
			nMach = -1
		}
		if e.Field != "" {
			path += "." + e.Field
		}
		r.errorf(path, "%s", e.Msg)
	}
	if len(errs) > 0 {
		return nil, nApps, nMach
	}
	m, err := etc.Generate(p)
	if err != nil {
		r.errorf("etc_generate", "%v", err)
		return nil, nApps, nMach
	}
	in.ETCOrigin = "etc_generate: " + p.Describe()
	return m, nApps, nMach
}

// WriteETC writes the ETC matrix as CSV in the form etc_csv reads: a
// comment line saying where it came from, a header row of machine names,
// then one row per application, every number in its shortest form that
// reads back as the same float64 (so a specification that reads the file
// has the same matrix, bit for bit).
func (in *Instance) WriteETC(w io.Writer) error {
	origin := in.ETCOrigin
	if origin == "" {
		origin = "given"
	}
	if _, err := fmt.Fprintf(w, "# ETC matrix of %s (rows: applications %s..%s; %s)\n",
		filepath.Base(in.SpecFile), in.Apps[0], in.Apps[len(in.Apps)-1], origin); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(in.Machines); err != nil {
		return err
	}
	rec := make([]string, len(in.Machines))
	for _, row := range in.ETC {
		for j, x := range row {
			rec[j] = num(x)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
