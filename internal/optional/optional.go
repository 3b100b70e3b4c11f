// Package optional holds what optional values share: a partial update
// (a domain's Patch, a request's optional fields) leaves a nil field as it
// is.
package optional

// Set sets *dst to *v, unless v is nil.
func Set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Of is a pointer to v, or nil when v is its type's zero value (for a time,
// IsZero): an optional field left out.
func Of[T comparable](v T) *T {
	var zero T
	if z, ok := any(v).(interface{ IsZero() bool }); ok && z.IsZero() || v == zero {
		return nil
	}
	return &v
}
