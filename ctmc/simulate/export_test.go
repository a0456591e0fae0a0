package simulate

// WithGeneral returns o forcing the general evaluation even where tables
// apply, for tests outside the package that compare the two.
func WithGeneral(o Options) Options {
	o.general = true
	return o
}
