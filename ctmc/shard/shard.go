package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"pepa/internal/option"
)

// Version is the shard file format written; Read refuses others.
const Version = 1

// Index is shard K of N (K from 1).
type Index struct{ K, N int }

// MaxShards bounds N.
const MaxShards = 1 << 20

// Parse reads "K/N".
func Parse(s string) (Index, error) {
	k, n, ok := strings.Cut(s, "/")
	ki, err1 := strconv.Atoi(strings.TrimSpace(k))
	ni, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil || ni < 1 || ni > MaxShards || ki < 1 || ki > ni {
		return Index{}, option.Errorf("{Shard} wants K/N with 1 <= K <= N (e.g. 2/4, or $SLURM_ARRAY_TASK_ID/4 with --array=1-4), got %q", s)
	}
	return Index{ki, ni}, nil
}

func (ix Index) String() string { return fmt.Sprintf("%d/%d", ix.K, ix.N) }

// Range is the shard's units of a run of total: first and count.
func (ix Index) Range(total int) (first, count int) {
	lo := int(int64(ix.K-1) * int64(total) / int64(ix.N))
	hi := int(int64(ix.K) * int64(total) / int64(ix.N))
	return lo, hi - lo
}

// Model is an input file of the run and the SHA-256 of its content.
type Model struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// Hash describes a file's content.
func Hash(file string, content []byte) Model {
	sum := sha256.Sum256(content)
	return Model{File: file, SHA256: hex.EncodeToString(sum[:])}
}

// Header says what a shard file is.
type Header struct {
	Version int    `json:"pepa_shard"`
	Verb    string `json:"verb"`
	// Command is the run's arguments in canonical form, without those
	// that do not change its results (the shard, the output file, the
	// format, the number of workers).
	Command []string `json:"command"`
	Models  []Model  `json:"models"`
	Shard   int      `json:"shard"`
	Shards  int      `json:"shards"`
	// Units names what the run is split into ("replications", "streams",
	// "points"); Total is how many the whole run has, First and Count the
	// shard's.
	Units string `json:"units"`
	Total int    `json:"total"`
	First int    `json:"first"`
	Count int    `json:"count"`
	// Render holds how the run was asked to print (--format, ...): merge's
	// defaults, not part of what the shards must agree on.
	Render map[string]string `json:"render,omitempty"`
}

// File is a shard file: its header and the verb's data.
type File struct {
	Header
	Data json.RawMessage `json:"data"`
	Name string          `json:"-"` // where it was read from
}

// Write writes a shard file: the header indented, one field a line, then
// the data on one line.
func Write(w io.Writer, h Header, data any) error {
	h.Version = Version
	d, err := json.Marshal(data)
	if err != nil {
		return err
	}
	head, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.Write(bytes.TrimSuffix(head, []byte("\n}")))
	out.WriteString(",\n  \"data\": ")
	out.Write(d)
	out.WriteString("\n}\n")
	_, err = w.Write(out.Bytes())
	return err
}

// Read reads a shard file; name is for errors.
func Read(name string, r io.Reader) (*File, error) {
	dec := json.NewDecoder(r)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: not a shard file: %w", name, err)
	}
	if f.Version != Version {
		if f.Version == 0 {
			return nil, fmt.Errorf("%s: not a shard file (no \"pepa_shard\" version)", name)
		}
		return nil, fmt.Errorf("%s: shard file format %d; this pepa reads format %d", name, f.Version, Version)
	}
	if f.Shards < 1 || f.Shard < 1 || f.Shard > f.Shards {
		return nil, fmt.Errorf("%s: shard %d/%d is not a shard index", name, f.Shard, f.Shards)
	}
	f.Name = name
	return &f, nil
}

// Check verifies that files are the N shards of one run, each once: same
// verb, command, models (content), shard count and total, every index
// from 1 to N present, and each file's range the one its index gives.
// It returns the files in shard order.
func Check(files []*File) ([]*File, error) {
	if len(files) == 0 {
		return nil, errors.New("no shard file")
	}
	f0 := files[0]
	var errs []error
	differ := func(f *File, what string, a, b any) {
		errs = append(errs, fmt.Errorf("%s and %s are not shards of one run: the %s differ (%v, %v)", f0.Name, f.Name, what, a, b))
	}
	for _, f := range files[1:] {
		switch {
		case f.Verb != f0.Verb:
			differ(f, "verbs", f0.Verb, f.Verb)
		case !slices.Equal(f.Command, f0.Command):
			differ(f, "commands", strings.Join(f0.Command, " "), strings.Join(f.Command, " "))
		case !slices.Equal(f.Models, f0.Models):
			differ(f, "models", describe(f0.Models), describe(f.Models))
		case f.Shards != f0.Shards:
			differ(f, "shard counts", f0.Shards, f.Shards)
		case f.Units != f0.Units || f.Total != f0.Total:
			differ(f, "runs' sizes", fmt.Sprint(f0.Total, " ", f0.Units), fmt.Sprint(f.Total, " ", f.Units))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	byIndex := map[int]*File{}
	for _, f := range files {
		if prev, ok := byIndex[f.Shard]; ok {
			errs = append(errs, fmt.Errorf("shard %d/%d is given twice (%s and %s)", f.Shard, f.Shards, prev.Name, f.Name))
			continue
		}
		byIndex[f.Shard] = f
		if first, count := (Index{f.Shard, f.Shards}).Range(f.Total); f.First != first || f.Count != count {
			errs = append(errs, fmt.Errorf("%s: shard %d/%d of %d %s holds %s %d to %d, not %d to %d", f.Name, f.Shard, f.Shards, f.Total, f.Units,
				f.Units, f.First, f.First+f.Count-1, first, first+count-1))
		}
	}
	var missing []string
	for k := 1; k <= f0.Shards; k++ {
		if byIndex[k] == nil {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 10 {
			missing = append(missing[:10], "...")
		}
		errs = append(errs, fmt.Errorf("shards %s of %d are missing", strings.Join(missing, ", "), f0.Shards))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := slices.Clone(files)
	sort.Slice(out, func(i, j int) bool { return out[i].Shard < out[j].Shard })
	return out, nil
}

func describe(ms []Model) string {
	var parts []string
	for _, m := range ms {
		h := m.SHA256
		if len(h) > 12 {
			h = h[:12]
		}
		parts = append(parts, m.File+" "+h)
	}
	return strings.Join(parts, ", ")
}
