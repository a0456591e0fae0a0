package models

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"

	"pepa/models/etc"
)

// generateETC draws the matrix of the specification's etc_generate field
// (package etc), or reports why not at the field's place. given is the
// matrix from etc or etc_csv, if any: only one source is allowed.
func (r *resolver) generateETC(in *Instance, given [][]float64) [][]float64 {
	s := r.s
	if given != nil || s.ETC != nil || s.ETCFile != "" {
		r.errorf("etc_generate", "give the ETC matrix one way: inline (etc), as a file (etc_csv) or generated (etc_generate)")
		return nil
	}
	p, errs := s.ETCGenerate.Resolve()
	for _, e := range errs {
		path := "etc_generate"
		if e.Field != "" {
			path += "." + e.Field
		}
		r.errorf(path, "%s", e.Msg)
	}
	if len(errs) > 0 {
		return nil
	}
	m, err := etc.Generate(p)
	if err != nil {
		r.errorf("etc_generate", "%v", err)
		return nil
	}
	in.ETCOrigin = "etc_generate: " + p.Describe()
	return m
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
