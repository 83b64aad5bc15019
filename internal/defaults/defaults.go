// Package defaults fills in the options a caller left unset. Across
// questiond's packages a numeric option (a count, a size, a duration) that
// is zero, or negative where the package does not refuse negatives, means
// "use the package's Default…"; Fill says so once.
package defaults

// Number is what Fill fills: counts, sizes and durations.
type Number interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float64
}

// Fill sets *v to def when *v is zero or negative.
func Fill[T Number](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
